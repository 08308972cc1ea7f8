import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// `Idempotency-Key` on the writes that send: a retried request gets the first answer, and nothing is sent twice.
@Suite("Server: idempotent writes", .timeLimit(.minutes(3)))
struct IdempotencyTests {
    static let key = HTTPField.Name("Idempotency-Key")!

    static func headers(_ key: String) -> HTTPFields { [Self.key: key] }

    @Test("a retried send with the same key answers the first answer and sends nothing more", arguments: Backend.available)
    func replay(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let bearer = try await SendTests.key(app)
            let tokens = [testToken(1), testToken(2)]
            for token in tokens {
                try await client.register(token, debug: true, extra: #", "userId": "u1""#)
            }
            let body = #"{"target": {"user": "u1"}, "alert": "Your order shipped"}"#
            let first = try await client.call(.post, "/api/send", body: body, bearer: bearer, headers: Self.headers("order-1"))
            #expect(first.status == .ok && first.headers[IdempotencyMiddleware.replayedHeader] == nil, "\(first)")
            let again = try await client.call(.post, "/api/send", body: body, bearer: bearer, headers: Self.headers("order-1"))
            #expect(again.status == .ok && again.body == first.body, "\(again)")
            #expect(again.headers[IdempotencyMiddleware.replayedHeader] == "true")
            for token in tokens { #expect(try emulator.inbox(for: token).count == 1, "no second push") }

            // The same key for another request is refused; without a key, or with another, it is a new send.
            let other = #"{"target": {"user": "u1"}, "alert": "Your order arrived"}"#
            let reused = try await client.call(.post, "/api/send", body: other, bearer: bearer, headers: Self.headers("order-1"))
            #expect(reused.status == .unprocessableContent && reused.reason == "idempotencyKeyReused", "\(reused)")
            let fresh = try await client.call(.post, "/api/send", body: other, bearer: bearer, headers: Self.headers("order-2"))
            #expect(fresh.status == .ok && fresh.json["id"] != first.json["id"], "\(fresh)")

            // Keys are per API key: another key's request with the same Idempotency-Key is its own.
            let otherBearer = try await SendTests.key(app)
            let theirs = try await client.call(.post, "/api/send", body: body, bearer: otherBearer, headers: Self.headers("order-1"))
            #expect(theirs.status == .ok && theirs.json["id"] != first.json["id"], "\(theirs)")
            for token in tokens { #expect(try emulator.inbox(for: token).count == 3) }

            // A queued send answers 202 with its Location, again on a retry.
            let queued = #"{"target": {"user": "u1"}, "alert": "Paced", "rate": 1}"#
            let scheduled = try await client.call(.post, "/api/send", body: queued, bearer: bearer, headers: Self.headers("later"))
            let replayed = try await client.call(.post, "/api/send", body: queued, bearer: bearer, headers: Self.headers("later"))
            #expect(scheduled.status == .accepted && replayed.status == .accepted, "\(scheduled)")
            #expect(replayed.body == scheduled.body, "\(replayed)")
            #expect(replayed.headers[.location] == scheduled.headers[.location] && scheduled.headers[.location] != nil)
            let page = try await app.store.recentSends(after: nil, limit: 100)
            #expect(page.sends.count == 4, "order-1, order-2, the other key's order-1 and later: \(page.sends.map(\.summary))")
        }
    }

    @Test("a refused request is not remembered, and a malformed key is refused", arguments: Backend.available)
    func refusals(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let bearer = try await SendTests.key(app)
            try await client.register(testToken(1), debug: true, extra: #", "userId": "u1""#)
            for bad in ["", "has space", String(repeating: "k", count: 256), "tab\there"] {
                let answer = try await client.call(
                    .post, "/api/send", body: #"{"target": {"user": "u1"}, "alert": "x"}"#, bearer: bearer,
                    headers: Self.headers(bad))
                #expect(answer.status == .badRequest && answer.reason == "invalidIdempotencyKey", "\(bad): \(answer)")
            }
            let invalid = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u1"}, "priority": 7, "alert": "x"}"#, bearer: bearer,
                headers: Self.headers("retry-me"))
            #expect(invalid.status == .badRequest, "\(invalid)")
            // The refusal released the key: the corrected request runs under it.
            let corrected = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u1"}, "alert": "x"}"#, bearer: bearer,
                headers: Self.headers("retry-me"))
            #expect(corrected.status == .ok, "\(corrected)")
            // Reads ignore the header.
            let list = try await client.call(.get, "/api/sends", bearer: bearer, headers: Self.headers("retry-me"))
            #expect(list.status == .ok)
        }
    }

    @Test(
        "1,000 concurrent requests over 100 keys (on two instances with PostgreSQL) make exactly 100 sends",
        arguments: Backend.available)
    func concurrentDuplicates(backend: Backend) async throws {
        try await TestDatabase.with(backend) { databaseURL in
            try await SharedEmulator.with(databaseURL: databaseURL) { shared in
                var servers: [HeraldApplication] = []
                for index in 0..<(backend == .postgres ? 2 : 1) {
                    servers.append(try await shared.instance("api-\(index)"))
                }
                let built = servers
                let devices = 3
                try await built[0].test(.router) { first in
                    // The store is migrated once the server runs.
                    for n in 1...devices {
                        _ = try await built[0].store.upsert(
                            TokenRegistration(
                                token: StoreConformance.token(n), topic: ServerHarness.topic, environment: .development,
                                userID: "buyer"))
                    }
                    let bearer = try await SendTests.key(built[0])
                    try await Self.withSecond(built, first) { second in
                        let clients = [ServerClient(client: first), second.map(ServerClient.init(client:))].compactMap { $0 }
                        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                            for request in 0..<1_000 {
                                let client = clients[request % clients.count]
                                let order = request % 100
                                group.addTask {
                                    // A duplicate that finds the first still running is told to retry, and so is a
                                    // request the database could not take in time under this load (503 unavailable,
                                    // nothing stored): retrying with the same key is what the key is for.
                                    while true {
                                        let answer = try await client.call(
                                            .post, "/api/send",
                                            body: #"{"target": {"user": "buyer"}, "alert": "Order \#(order) shipped"}"#,
                                            bearer: bearer, headers: Self.headers("order-\(order)"))
                                        if answer.status == .conflict && answer.reason == "idempotencyKeyInProgress"
                                            || answer.status == .serviceUnavailable && answer.reason == "unavailable"
                                        {
                                            await Task.yield()
                                            continue
                                        }
                                        #expect(answer.status == .ok, "\(answer)")
                                        return (order, answer.json["id"]?.stringValue ?? "")
                                    }
                                }
                            }
                            var ids: [Int: Set<String>] = [:]
                            for try await (order, id) in group { ids[order, default: []].insert(id) }
                            return ids
                        }
                        #expect(answers.count == 100 && answers.values.allSatisfy { $0.count == 1 }, "one send id per key")
                        #expect(Set(answers.values.flatMap { $0 }).count == 100)
                        let page = try await built[0].store.recentSends(after: nil, limit: 1_000)
                        #expect(page.sends.count == 100)
                        #expect(shared.emulator.counters.accepted == 100 * devices, "\(shared.emulator.counters)")
                    }
                }
            }
        }
    }

    /// Runs `body` with a test client of the second server, when there is one.
    private static func withSecond(
        _ servers: [HeraldApplication], _ first: any TestClientProtocol,
        _ body: @escaping @Sendable ((any TestClientProtocol)?) async throws -> Void
    ) async throws {
        guard servers.count > 1 else { return try await body(nil) }
        try await servers[1].test(.router) { second in try await body(second) }
    }
}
