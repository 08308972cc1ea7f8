import Foundation
import HTTPTypes
import HummingbirdTesting
import HeraldCore
import HeraldStore
import HeraldTesting
import HeraldWebhooks
import Synchronization
import Testing

@testable import HeraldServer

@Suite("Webhooks: signed deliveries of the outbox to a local receiver", .timeLimit(.minutes(2)))
struct WebhookTests {
    static let topic = ServerHarness.topic

    /// A quick deliverer: looks every 20 ms.
    static func quick(_ configuration: inout ServerConfiguration) {
        configuration.webhooks.pollInterval = .milliseconds(20)
    }

    /// Registers an endpoint and returns its id and secret.
    static func register(
        _ client: ServerClient, key: String, url: String, events: [String]
    ) async throws -> (id: String, secret: String) {
        let list = events.map { "\"\($0)\"" }.joined(separator: ", ")
        let answer = try await client.call(
            .post, "/api/webhooks", body: #"{"url": "\#(url)", "events": [\#(list)], "description": "test"}"#,
            bearer: key)
        #expect(answer.status == .created, "\(answer)")
        return (
            try #require(answer.json["endpoint"]?["id"]?.stringValue), try #require(answer.json["secret"]?.stringValue)
        )
    }

    /// Registers `count` devices of the test app and sends them an alert inline.
    static func sendToDevices(_ client: ServerClient, key: String, from first: Int, count: Int) async throws -> String {
        for n in first..<(first + count) { try await client.register(StoreConformance.token(n), debug: false) }
        let tokens = (first..<(first + count)).map { "\"\(StoreConformance.token($0).hex)\"" }.joined(separator: ", ")
        let answer = try await client.call(
            .post, "/api/send", body: #"{"target": {"tokens": [\#(tokens)]}, "alert": "hello"}"#, bearer: key)
        #expect(answer.status == .ok || answer.status == .accepted, "\(answer)")
        return try #require(answer.json["id"]?.stringValue)
    }

    @Test("an endpoint gets its app's events in signed batches, in order per send; a rotated secret signs beside the new one", arguments: Backend.available)
    func signedBatches(_ backend: Backend) async throws {
        try await WebhookReceiver.with { receiver, url in
            try await ServerHarness.withServer(backend, configure: Self.quick) { client, app in
                let key = try await SendTests.key(app)
                let endpoint = try await Self.register(
                    client, key: key, url: url, events: ["notification.accepted", "send.completed"])
                let first = try await Self.sendToDevices(client, key: key, from: 1, count: 3)
                let second = try await Self.sendToDevices(client, key: key, from: 11, count: 2)
                await receiver.accepted.wait(untilAtLeast: 7)

                let events = receiver.acceptedEvents
                #expect(events.count == 7)
                for send in [first, second] {
                    let types = events.filter { $0["data"]?["sendId"]?.stringValue == send }.map {
                        $0["type"]?.stringValue ?? ""
                    }
                    #expect(types.last == "send.completed" && types.dropLast().allSatisfy { $0 == "notification.accepted" })
                    #expect(types.count == (send == first ? 4 : 3))
                }
                #expect(events.allSatisfy { $0["topic"]?.stringValue == Self.topic })
                let ids = events.compactMap { $0["id"]?.stringValue.flatMap { Int($0) } }
                #expect(ids == ids.sorted() && Set(ids).count == 7, "each event once, in outbox order")
                for delivery in receiver.deliveries {
                    #expect(
                        WebhookSignature.verify(
                            header: delivery.signature, body: delivery.body, secret: endpoint.secret, now: Date()))
                    #expect(!WebhookSignature.verify(
                        header: delivery.signature, body: delivery.body + [0x20], secret: endpoint.secret, now: Date()))
                    #expect(String(decoding: delivery.body.prefix(14), as: UTF8.self) == #"[{"createdAt":"#)
                }

                // Rotation: the next delivery carries both signatures.
                let rotated = try await client.call(
                    .post, "/api/webhooks/\(endpoint.id)/rotate-secret", body: #"{"overlapSeconds": 600}"#, bearer: key)
                #expect(rotated.status == .ok, "\(rotated)")
                let newSecret = try #require(rotated.json["secret"]?.stringValue)
                #expect(newSecret != endpoint.secret && newSecret.hasPrefix("whsec_"))
                let test = try await client.call(.post, "/api/webhooks/\(endpoint.id)/test", bearer: key)
                #expect(test.status == .accepted, "\(test)")
                await receiver.accepted.wait(untilAtLeast: 8)
                let last = try #require(receiver.deliveries.last)
                #expect(last.events.first?["type"]?.stringValue == "webhook.test")
                #expect(last.signature.components(separatedBy: "v1=").count == 3, "\(last.signature)")
                for secret in [endpoint.secret, newSecret] {
                    #expect(WebhookSignature.verify(header: last.signature, body: last.body, secret: secret, now: Date()))
                }
                #expect(!WebhookSignature.verify(
                    header: last.signature, body: last.body, secret: newSecret, now: Date().addingTimeInterval(301)),
                    "outside the replay window")

                // The receiver has answered; the deliverer records each answer right after.
                await app.webhooks.attemptsRecorded(atLeast: receiver.deliveries.count)
                let shown = try await client.call(.get, "/api/webhooks/\(endpoint.id)", bearer: key)
                #expect(shown.json["endpoint"]?["status"]?.stringValue == "active")
                #expect(shown.json["queue"]?["pending"]?.intValue == 0)
                let deliveries = try #require(shown.json["deliveries"]?.arrayValue)
                #expect(!deliveries.isEmpty && deliveries.allSatisfy { $0["delivered"]?.boolValue == true })
                #expect(deliveries.allSatisfy { $0["status"]?.intValue == 200 && $0["latencyMs"] != nil })
                #expect(shown.body.range(of: endpoint.secret) == nil && shown.body.range(of: newSecret) == nil,
                    "secrets are shown once")

                // Per-endpoint metrics.
                let metrics = try await client.call(.get, "/metrics").body
                #expect(metrics.contains(#"herald_webhook_events_delivered_total{endpoint="\#(endpoint.id)"} 8"#), "\(metrics)")
                #expect(metrics.contains(#"herald_webhook_deliveries_total{endpoint="\#(endpoint.id)",result="delivered"}"#))
                #expect(metrics.contains(#"herald_webhook_delivery_duration_seconds_count{endpoint="\#(endpoint.id)"}"#))
                #expect(!metrics.contains(endpoint.secret) && !metrics.contains(newSecret))
            }
        }
    }

    @Test("bad endpoint requests are refused with 4xx and change nothing")
    func refusals() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let refused: [(String, String)] = [
                (#"{"url": "ftp://example.com", "events": ["send.completed"]}"#, "url"),
                (#"{"url": "https://user:pw@example.com", "events": ["send.completed"]}"#, "url"),
                (#"{"url": "https://example.com/h", "events": ["send.sent"]}"#, "events"),
                (#"{"url": "https://example.com/h", "events": []}"#, "events"),
                (#"{"url": "https://example.com/h"}"#, "events"),
                (#"{"url": "https://example.com/h", "events": ["send.completed"], "topic": "com.other"}"#, "unknownTopic"),
                (#"{"url": "https://example.com/h", "events": ["send.completed"], "secret": "mine"}"#, "secret"),
                // The console refused a control character in the description; the API once took it.
                (#"{"url": "https://example.com/h", "events": ["send.completed"], "description": "a\u0007b"}"#, "description"),
            ]
            for (body, field) in refused {
                let answer = try await client.call(.post, "/api/webhooks", body: body, bearer: key)
                #expect(answer.status == .badRequest, "\(body): \(answer)")
                #expect(answer.body.contains(field), "\(body): \(answer)")
            }
            #expect(try await client.call(.post, "/api/webhooks", body: refused[0].0).status == .unauthorized)
            let sendOnly = try await app.store.createAPIKey(name: "sender", scopes: [.send]).secret.value
            #expect(
                try await client.call(
                    .post, "/api/webhooks", body: #"{"url": "https://example.com/h", "events": ["send.completed"]}"#,
                    bearer: sendOnly
                ).status == .forbidden)
            #expect(try await client.call(.get, "/api/webhooks/\(UUID())", bearer: key).status == .notFound)
            #expect(try await client.call(.get, "/api/webhooks", bearer: key).json["endpoints"]?.arrayValue?.isEmpty == true)
        }
    }

    /// Moves the wall clock to the endpoint's next try, and returns once the deliverer has recorded `attempts`.
    static func nextTry(_ app: HeraldApplication, _ clock: ManualWallClock, endpoint: UUID, attempts: Int) async throws
    {
        let next = try #require(try await app.store.webhookEndpoint(endpoint)).nextAttemptAt
        if next > clock.now() { clock.set(to: next) }
        await app.webhooks.attemptsRecorded(atLeast: attempts)
    }

    @Test("a receiver that answers 500 for a simulated minute loses nothing: retried with backoff, then delivered in order", arguments: Backend.available)
    func failingMinute(_ backend: Backend) async throws {
        let clock = ManualWallClock()
        let start = clock.now()
        let failing = Switch(true)
        try await WebhookReceiver.with(answer: { _ in failing.isOn ? 500 : 200 }) { receiver, url in
            try await ServerHarness.withServer(backend, clock: clock, configure: Self.quick) { client, app in
                let key = try await SendTests.key(app)
                let endpoint = try await Self.register(
                    client, key: key, url: url, events: ["notification.accepted", "send.completed"])
                let id = try #require(UUID(uuidString: endpoint.id))
                let send = try await Self.sendToDevices(client, key: key, from: 1, count: 5)
                var attempts = 0
                var delays: [TimeInterval] = []
                // Fails while the simulated minute lasts: each retry comes once its backoff is over, each later.
                while clock.now().timeIntervalSince(start) < 60 {
                    attempts += 1
                    try await Self.nextTry(app, clock, endpoint: id, attempts: attempts)
                    let stored = try #require(try await app.store.webhookEndpoint(id))
                    #expect(stored.consecutiveFailures == attempts && stored.status == .active)
                    delays.append(stored.nextAttemptAt.timeIntervalSince(clock.now()))
                }
                #expect(attempts >= 3, "\(delays)")
                #expect(zip(delays, delays.dropFirst()).allSatisfy { $0.0 / 2 <= $0.1 }, "backoff grows: \(delays)")
                #expect(delays.first.map { (2.5...5).contains($0) } == true, "5 s with jitter: \(delays)")
                failing.set(false)
                try await Self.nextTry(app, clock, endpoint: id, attempts: attempts + 1)
                await receiver.accepted.wait(untilAtLeast: 6)

                #expect(receiver.deliveries.filter { $0.status == 500 }.count == attempts)
                let events = receiver.acceptedEvents
                #expect(events.map { $0["type"]?.stringValue ?? "" } == Array(repeating: "notification.accepted", count: 5) + ["send.completed"])
                #expect(events.allSatisfy { $0["data"]?["sendId"]?.stringValue == send })
                #expect(try await app.store.webhookEndpoint(id)?.consecutiveFailures == 0)
                #expect(try await app.store.webhookQueues()[id] == nil, "nothing waits")
            }
        }
    }

    @Test("after N failures over the minimum time an endpoint is paused with the reason; its dead letter replays", arguments: Backend.available)
    func pauseAndReplay(_ backend: Backend) async throws {
        let clock = ManualWallClock()
        let failing = Switch(true)
        try await WebhookReceiver.with(answer: { _ in failing.isOn ? 503 : 204 }) { receiver, url in
            try await ServerHarness.withServer(backend, clock: clock, configure: {
                Self.quick(&$0)
                $0.webhooks.pauseAfterFailures = 3
                $0.webhooks.pauseAfter = .seconds(30)
            }) { client, app in
                let key = try await SendTests.key(app)
                let endpoint = try await Self.register(client, key: key, url: url, events: ["notification.accepted"])
                let id = try #require(UUID(uuidString: endpoint.id))
                _ = try await Self.sendToDevices(client, key: key, from: 1, count: 2)
                var attempts = 0
                while try await app.store.webhookEndpoint(id)?.status == .active {
                    attempts += 1
                    try await Self.nextTry(app, clock, endpoint: id, attempts: attempts)
                }
                #expect(attempts >= 3, "paused no sooner than the third failure and 30 s")
                let shown = try await client.call(.get, "/api/webhooks/\(endpoint.id)", bearer: key)
                #expect(shown.json["endpoint"]?["status"]?.stringValue == "paused")
                let reason = try #require(shown.json["endpoint"]?["pausedReason"]?.stringValue)
                #expect(reason.contains("\(attempts) failed deliveries") && reason.contains("503"), "\(reason)")
                #expect(shown.json["queue"]?["dead"]?.intValue == 2 && shown.json["queue"]?["pending"]?.intValue == 0)

                failing.set(false)
                let replayed = try await client.call(.post, "/api/webhooks/\(endpoint.id)/replay", bearer: key)
                #expect(replayed.json["replayed"]?.intValue == 2, "\(replayed)")
                #expect(replayed.json["endpoint"]?["status"]?.stringValue == "active")
                await receiver.accepted.wait(untilAtLeast: 2)
                await app.webhooks.attemptsRecorded(atLeast: receiver.deliveries.count)
                #expect(receiver.acceptedEvents.map { $0["type"]?.stringValue } == ["notification.accepted", "notification.accepted"])

                // Paused by hand: events wait, and go once resumed.
                let paused = try await client.call(
                    .patch, "/api/webhooks/\(endpoint.id)", body: #"{"paused": true}"#, bearer: key)
                #expect(paused.json["endpoint"]?["pausedReason"]?.stringValue == "Paused by an administrator.")
                _ = try await Self.sendToDevices(client, key: key, from: 5, count: 1)
                #expect(try await app.store.webhookQueues()[id]?.pending == 1)
                _ = try await client.call(.patch, "/api/webhooks/\(endpoint.id)", body: #"{"paused": false}"#, bearer: key)
                await receiver.accepted.wait(untilAtLeast: 3)
            }
        }
    }

    @Test("a server stopped with a batch in flight loses nothing: another instance on the database delivers it once the lease runs out", arguments: Backend.available)
    func restart(_ backend: Backend) async throws {
        let clock = ManualWallClock()
        let release = Gate()
        try await WebhookReceiver.with(answer: { index in
            // The first delivery is held until the first server is gone.
            if index == 0 { await release.wait() }
            return 200
        }) { receiver, url in
            try await TestDatabase.with(backend) { database in
                let first = try await ServerHarness.build(
                    databaseURL: database, clock: clock, logger: nil, configure: Self.quick)
                try await first.test(.router) { routerClient in
                    let client = ServerClient(client: routerClient)
                    let key = try await SendTests.key(first)
                    _ = try await Self.register(client, key: key, url: url, events: ["notification.accepted", "send.completed"])
                    _ = try await Self.sendToDevices(client, key: key, from: 1, count: 4)
                    await receiver.arrived.wait(untilAtLeast: 1)
                }
                // The first server is stopped with its delivery unanswered: its lease holds the endpoint until it
                // runs out.
                let second = try await ServerHarness.build(
                    databaseURL: database, clock: clock, logger: nil, configure: Self.quick)
                try await second.test(.router) { _ in
                    clock.advance(by: .seconds(61))
                    await receiver.accepted.wait(untilAtLeast: 5)
                    release.open()
                }
                let events = receiver.acceptedEvents
                let ids = Set(events.compactMap { $0["id"]?.stringValue })
                #expect(ids.count == 5, "every event delivered: \(events)")
                #expect(events.last?["type"]?.stringValue == "send.completed")
            }
        }
    }
}

/// A flag tests flip while a receiver reads it.
final class Switch: Sendable {
    private let state: Mutex<Bool>

    init(_ on: Bool) { state = Mutex(on) }

    var isOn: Bool { state.withLock { $0 } }

    func set(_ on: Bool) { state.withLock { $0 = on } }
}
