import Foundation
import HeraldClient
import HeraldCore
import HeraldTesting
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The uploader against a real HTTP server on 127.0.0.1. Backoff waits go through an automatically advancing manual
/// clock, so no test sleeps; the waits the client asked for are checked instead.
@Suite("Registration upload against a loopback server", .timeLimit(.minutes(1)))
struct RegistrationClientTests {
    static let registration = try! Registration(
        deviceToken: Data((0..<32).map { UInt8($0) }), environment: .development, topic: "com.example.herald.demo",
        userID: "user-42", platform: .iOS)
    static let echo =
        #"{"token":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f","debug":true,"environment":"development","topic":"com.example.herald.demo","id":7}"#

    /// A client of `server` with an automatic clock, a fixed jitter and its own storage.
    static func client(
        of server: LoopbackHTTPServer, storage: any KeyValueStorage = InMemoryStorage(),
        clock: ManualClock = ManualClock(advancesAutomatically: true),
        key: String? = nil, attempts: Int = 4
    ) throws -> RegistrationClient {
        let configuration = try RegistrationClient.Configuration(
            serverURL: server.baseURL, registrationKey: key, allowsInsecureHTTP: true,
            retry: RetryPolicy(
                maximumAttempts: attempts, initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(30),
                jitter: 0.5))
        return RegistrationClient(
            configuration: configuration, session: URLSession(configuration: .ephemeral), storage: storage,
            clock: clock,
            wallClock: ManualWallClock(), randomFraction: { 0.5 })
    }

    @Test("a server that fails twice with 503 and then succeeds: the client retried with backoff and succeeded")
    func failsTwiceThenSucceeds() async throws {
        let clock = ManualClock(advancesAutomatically: true)
        let storage = InMemoryStorage()
        try await withLoopbackServer({ _, index in
            index < 2
                ? .respond(.json(503, #"{"error":"Starting up","reason":"unavailable"}"#))
                : .respond(.json(201, Self.echo))
        }) { server async throws in
            let client = try Self.client(of: server, storage: storage, clock: clock, key: "app-key-1")
            let receipt = try await client.register(Self.registration)
            #expect(receipt.attempts == 3 && receipt.isNew)
            #expect(receipt.registration?.token == Self.registration.token)
            #expect(
                clock.requestedSleeps == [.milliseconds(750), .milliseconds(1500)],
                "1 s and 2 s, each less a quarter of jitter")
            #expect(try client.pendingOperation() == nil)

            let requests = server.requests
            #expect(requests.count == 3)
            let request = try #require(requests.last)
            #expect(request.method == "POST" && request.path == "/api/token")
            #expect(request.header("Content-Type") == "application/json")
            #expect(request.header("X-Herald-Registration-Key") == "app-key-1")
            #expect(try JSONValue(parsing: request.body) == Self.registration.json)
        }
    }

    @Test("a network error (connection dropped) is retried like a 5xx")
    func networkErrorRetried() async throws {
        try await withLoopbackServer({ _, index in index == 0 ? .dropConnection : .respond(.json(200, Self.echo)) }) {
            server async throws in
            let receipt = try await Self.client(of: server).register(Self.registration)
            #expect(receipt.attempts == 2 && !receipt.isNew)
        }
    }

    @Test("429 waits at least the server's Retry-After")
    func retryAfter() async throws {
        let clock = ManualClock(advancesAutomatically: true)
        try await withLoopbackServer({ _, index in
            var busy = LoopbackHTTPServer.Response.json(429, #"{"error":"Slow down","reason":"rateLimited"}"#)
            busy.headers["Retry-After"] = "12"
            return index == 0 ? .respond(busy) : .respond(.json(201, Self.echo))
        }) { server async throws in
            _ = try await Self.client(of: server, clock: clock).register(Self.registration)
            #expect(clock.requestedSleeps == [.seconds(12)])
        }
    }

    @Test("a server that always fails: the client gives up, remembers the registration, and a later retry succeeds")
    func givesUpThenRetriesPending() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-pending-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let healthy = Atomic<Bool>(false)
        try await withLoopbackServer({ _, _ in
            healthy.load(ordering: .relaxed)
                ? .respond(.json(200, Self.echo))
                : .respond(.json(500, #"{"error":"Database down","reason":"internal"}"#))
        }) { server async throws in
            let client = try Self.client(of: server, storage: FileStorage(directory: directory), attempts: 3)
            await #expect {
                try await client.register(Self.registration)
            } throws: { error in
                guard let error = error as? RegistrationError else { return false }
                return error.code == .gaveUp && error.isPendingSaved && error.attempts == 3 && error.status == 500
                    && error.message.contains("retryPending") && !error.message.contains(Self.registration.token.hex)
            }
            #expect(server.requests.count == 3)

            // The record survives in the file storage: a new client (the next launch) finds it.
            let nextLaunch = try Self.client(of: server, storage: FileStorage(directory: directory), attempts: 3)
            let pending = try #require(try nextLaunch.pendingOperation())
            #expect(pending.kind == .register(Self.registration) && pending.attempts == 3)

            // Still failing: the record stays and counts every attempt.
            await #expect(throws: RegistrationError.self) { try await nextLaunch.retryPending() }
            #expect(try nextLaunch.pendingOperation()?.attempts == 6)

            healthy.store(true, ordering: .relaxed)
            let outcome = try await nextLaunch.retryPending()
            guard case .registered(let receipt) = outcome else {
                Issue.record("expected a registration, got \(outcome)")
                return
            }
            #expect(receipt.status == 200)
            #expect(try nextLaunch.pendingOperation() == nil)
            #expect(try await nextLaunch.retryPending() == .nothingPending)
            #expect(try JSONValue(parsing: server.requests.last!.body) == Self.registration.json)
        }
    }

    @Test(
        "a 400 is not retried, surfaces the server's reason, and clears what was pending",
        arguments: [400, 401, 403, 413])
    func clientErrorNotRetried(status: Int) async throws {
        let storage = InMemoryStorage()
        try await withLoopbackServer({ _, index in
            index == 0
                ? .respond(.json(503, "{}"))
                : .respond(.json(status, #"{"error":"The token is not hex","reason":"badDeviceToken"}"#))
        }) { server async throws in
            let client = try Self.client(of: server, storage: storage, attempts: 1)
            await #expect(throws: RegistrationError.self) { try await client.register(Self.registration) }
            #expect(try client.pendingOperation() != nil)

            await #expect {
                try await client.register(Self.registration)
            } throws: { error in
                guard let error = error as? RegistrationError else { return false }
                return error.code == .rejected && error.status == status && error.reason == "badDeviceToken"
                    && error.serverMessage == "The token is not hex" && error.attempts == 1 && !error.isPendingSaved
                    && error.message.contains("badDeviceToken")
            }
            #expect(
                server.requests.count == 2,
                "one request each: the 503 with one attempt allowed, the \(status) never retried")
            #expect(try client.pendingOperation() == nil)
        }
    }

    @Test("the nested error form and a non-JSON error body are both understood")
    func errorBodies() async throws {
        try await withLoopbackServer({ _, index in
            index == 0
                ? .respond(.json(400, #"{"error":{"message":"Bad topic","reason":"invalidField"}}"#))
                : .respond(LoopbackHTTPServer.Response(status: 400, body: Data("<html>Bad Request</html>".utf8)))
        }) { server async throws in
            let client = try Self.client(of: server)
            await #expect {
                try await client.register(Self.registration)
            } throws: {
                ($0 as? RegistrationError)?.reason == "invalidField"
                    && ($0 as? RegistrationError)?.serverMessage == "Bad topic"
            }
            await #expect {
                try await client.register(Self.registration)
            } throws: { ($0 as? RegistrationError)?.status == 400 && ($0 as? RegistrationError)?.reason == nil }
        }
    }

    @Test("unregister sends DELETE /api/token/{token} and treats 404 as success")
    func unregister() async throws {
        try await withLoopbackServer({ _, index in
            .respond(LoopbackHTTPServer.Response(status: index == 0 ? 204 : 404))
        }) { server async throws in
            let client = try Self.client(of: server, key: "app-key-1")
            #expect(try await client.unregister(Self.registration.token) == true)
            #expect(try await client.unregister(Self.registration.token) == false)
            let request = try #require(server.requests.first)
            #expect(request.method == "DELETE")
            #expect(request.path == "/api/token/\(Self.registration.token.hex)")
            #expect(request.header("X-Herald-Registration-Key") == "app-key-1")
        }
    }

    @Test("a failed unregister is remembered and replaces a pending registration")
    func unregisterPending() async throws {
        let storage = InMemoryStorage()
        let healthy = Atomic<Bool>(false)
        try await withLoopbackServer({ _, _ in
            healthy.load(ordering: .relaxed) ? .respond(LoopbackHTTPServer.Response(status: 204)) : .dropConnection
        }) { server async throws in
            let client = try Self.client(of: server, storage: storage, attempts: 2)
            await #expect(throws: RegistrationError.self) { try await client.register(Self.registration) }
            await #expect(throws: RegistrationError.self) { try await client.unregister(Self.registration.token) }
            #expect(try client.pendingOperation()?.kind == .unregister(Self.registration.token))
            healthy.store(true, ordering: .relaxed)
            #expect(try await client.retryPending() == .unregistered(removed: true))
            #expect(server.requests.last?.method == "DELETE")
            #expect(try client.pendingOperation() == nil)
        }
    }

    @Test("a registration cancelled while waiting to retry is remembered")
    func cancelledWhileWaiting() async throws {
        let clock = ManualClock()
        let storage = InMemoryStorage()
        try await withLoopbackServer({ _, _ in .respond(.json(503, "{}")) }) { server async throws in
            let client = try Self.client(of: server, storage: storage, clock: clock)
            let task = Task { try await client.register(Self.registration) }
            await clock.waitForSleepers(count: 1)
            task.cancel()
            await #expect {
                try await task.value
            } throws: {
                ($0 as? RegistrationError)?.code == .cancelled && ($0 as? RegistrationError)?.isPendingSaved == true
            }
            #expect(try client.pendingOperation()?.kind == .register(Self.registration))
        }
    }

    @Test("Live Activity tokens go up with the installation's fields, and an ended activity's token is unregistered")
    func liveActivityConveniences() async throws {
        let startToken = try DeviceToken(hex: "aa00bb11cc22dd33ee44ff55")
        let updateToken = try DeviceToken(hex: "0102030405060708")
        try await withLoopbackServer({ request, _ in
            request.method == "DELETE"
                ? .respond(LoopbackHTTPServer.Response(status: 204)) : .respond(.json(201, Self.echo))
        }) { server async throws in
            let client = try Self.client(of: server)
            try await client.register(Self.registration)
            try await client.registerPushToStartToken(
                startToken, activityType: "DeliveryAttributes", installation: Self.registration)
            try await client.registerActivityUpdateToken(
                updateToken, activityID: "order-1042", installation: Self.registration)
            #expect(try await client.activityEnded(updateToken: updateToken))

            let requests = server.requests
            #expect(requests.map(\.method) == ["POST", "POST", "POST", "DELETE"])
            #expect(
                try JSONValue(parsing: requests[1].body)
                    == Self.registration.forPushToStartToken(startToken, activityType: "DeliveryAttributes").json)
            let update = try JSONValue(parsing: requests[2].body)
            #expect(update["tokenKind"] == "liveactivity" && update["activityId"] == "order-1042")
            #expect(update["userId"] == "user-42" && update["topic"] == "com.example.herald.demo")
            #expect(requests[3].path == "/api/token/0102030405060708")
            #expect(
                try client.registeredToken() == Self.registration.token,
                "receipts keep naming the device by its device token, not by the last Live Activity token")
        }
    }

    @Test("a push-to-start token without a type is refused before any request, saying what to send")
    func pushToStartNeedsType() async throws {
        try await withLoopbackServer({ _, _ in .respond(.json(201, Self.echo)) }) { server async throws in
            let client = try Self.client(of: server)
            await #expect {
                try await client.registerPushToStartToken(
                    Self.registration.token, activityType: "", installation: Self.registration)
            } throws: { error in
                guard let error = error as? RegistrationError else { return false }
                return error.code == .invalidRegistration && error.field == "activityType"
                    && error.message.contains("ActivityAttributes")
            }
            #expect(server.requests.isEmpty)
        }
    }

    @Test("a Live Activity registration saved after a failure is sent again with its activity id and time zone")
    func pendingCarriesLiveActivityFields() async throws {
        let storage = InMemoryStorage()
        let healthy = Atomic<Bool>(false)
        var installation = Self.registration
        installation.timeZone = "Asia/Tokyo"
        let update = installation.forActivityUpdateToken(
            try DeviceToken(hex: "0102030405060708"), activityID: "order-1042")
        try await withLoopbackServer({ _, _ in
            healthy.load(ordering: .relaxed) ? .respond(.json(201, Self.echo)) : .dropConnection
        }) { server async throws in
            let client = try Self.client(of: server, storage: storage, attempts: 1)
            await #expect(throws: RegistrationError.self) {
                try await client.registerActivityUpdateToken(
                    update.token, activityID: "order-1042", installation: installation)
            }
            #expect(try client.pendingOperation()?.kind == .register(update))

            healthy.store(true, ordering: .relaxed)
            let nextLaunch = try Self.client(of: server, storage: storage)
            _ = try await nextLaunch.retryPending()
            let body = try JSONValue(parsing: try #require(server.requests.last).body)
            #expect(body == update.json)
            #expect(body["activityId"] == "order-1042" && body["timeZone"] == "Asia/Tokyo")
        }
    }
}
