import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// `POST /api/send` and `GET /api/sends/{id}` end to end: the server, its store and its in-process emulator.
@Suite("Server: send API", .timeLimit(.minutes(3)))
struct SendTests {
    /// Creates a key with the send and admin scopes.
    static func key(_ app: HeraldApplication) async throws -> String {
        try await app.store.createAPIKey(name: "test", scopes: [.send, .admin]).secret.value
    }

    /// The alert title of each notification in a device's inbox.
    static func titles(_ emulator: APNSEmulator, _ token: DeviceToken) throws -> [String] {
        try emulator.inbox(for: token).map { entry in
            let payload = try JSONValue(parsing: entry.payload)
            return payload["aps"]?["alert"]?["title"]?.stringValue ?? payload["aps"]?["alert"]?.stringValue ?? "-"
        }
    }

    @Test(
        "one user's devices in both environments each get their language's text from their own host; a 410 removes a token unless it was registered again after APNs's timestamp",
        arguments: Backend.available)
    func userSendEndToEnd(backend: Backend) async throws {
        let clock = ManualWallClock()
        try await ServerHarness.withServer(backend, clock: clock) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await Self.key(app)
            let french = testToken(0xa1)  // development, fr-CA first
            let english = testToken(0xa2, bytes: 80)  // production, en-GB
            let german = testToken(0xa3)  // development, no text in German: the default
            let frenchProduction = testToken(0xa4)  // production, fr
            let otherUser = testToken(0xa5)
            try await client.register(
                french, debug: true, extra: #", "userId": "alice", "preferredLanguages": ["fr-CA", "en"]"#)
            try await client.register(
                english, debug: false, extra: #", "userId": "alice", "preferredLanguages": ["en-GB"]"#)
            try await client.register(german, debug: true, extra: #", "userId": "alice", "preferredLanguages": ["de"]"#)
            try await client.register(
                frenchProduction, debug: false, extra: #", "userId": "alice", "preferredLanguages": ["fr"]"#)
            try await client.register(otherUser, debug: true, extra: #", "userId": "bob""#)

            let send =
                #"{"target": {"user": "alice"}, "alert": {"title": "Hello", "body": "default"}, "localizations": {"fr": {"title": "Bonjour"}, "en": {"title": "Hello (en)"}}}"#
            let first = try await client.call(.post, "/api/send", body: send, bearer: key)
            #expect(first.status == .ok, "\(first)")
            #expect(first.json["status"]?.stringValue == "completed" && first.json["targetCount"]?.intValue == 4)
            #expect(first.json["counts"]?["accepted"]?.intValue == 4)
            #expect(try Self.titles(emulator, french) == ["Bonjour"])
            #expect(try Self.titles(emulator, english) == ["Hello (en)"])
            #expect(try Self.titles(emulator, german) == ["Hello"])
            #expect(try Self.titles(emulator, frenchProduction) == ["Bonjour"])
            #expect(emulator.device(otherUser) == nil, "bob's device got nothing")
            // The emulator makes a device of the environment it was first sent to: each token went to its own host.
            #expect(
                emulator.device(french)?.environment == .development
                    && emulator.device(german)?.environment == .development)
            #expect(
                emulator.device(english)?.environment == .production
                    && emulator.device(frenchProduction)?.environment == .production)

            // APNs says both production tokens were unregistered at T; the app registered one of them again after T.
            let unregisteredAt = clock.now().addingTimeInterval(10)
            try emulator.markUnregistered(english, at: unregisteredAt)
            try emulator.markUnregistered(frenchProduction, at: unregisteredAt)
            clock.advance(by: .seconds(20))
            try await client.register(
                frenchProduction, debug: false, extra: #", "userId": "alice", "preferredLanguages": ["fr"]"#)

            let second = try await client.call(.post, "/api/send", body: send, bearer: key)
            #expect(second.status == .ok)
            let outcomes = second.json["outcomes"]?.arrayValue ?? []
            let byToken = Dictionary(uniqueKeysWithValues: outcomes.map { ($0["token"]?.stringValue ?? "", $0) })
            #expect(
                byToken[english.hex]?["httpStatus"]?.intValue == 410
                    && byToken[english.hex]?["reason"]?.stringValue == "Unregistered")
            #expect(byToken[english.hex]?["action"]?.stringValue == "removed")
            #expect(byToken[frenchProduction.hex]?["action"]?.stringValue == "kept")
            #expect(byToken[french.hex]?["status"]?.stringValue == "accepted")

            let removed = try #require(try await app.store.device(english))
            #expect(!removed.isActive && removed.invalidation?.reason == .unregistered)
            #expect(try await app.store.device(frenchProduction)?.isActive == true)

            let admin = try await client.call(.get, "/api/devices/\(english.hex)", bearer: key)
            #expect(
                admin.json["active"]?.boolValue == false
                    && admin.json["invalidation"]?["reason"]?.stringValue == "Unregistered")
            let alice = try await client.call(.get, "/api/devices?user=alice", bearer: key)
            #expect(alice.json["devices"]?.arrayValue?.count == 3, "the removed token is left out")

            let third = try await client.call(.post, "/api/send", body: send, bearer: key)
            #expect(third.json["targetCount"]?.intValue == 3)

            let record = try await client.call(
                .get, "/api/sends/\(second.json["id"]?.stringValue ?? "")?limit=3", bearer: key)
            #expect(
                record.json["counts"]?["rejected"]?.intValue == 2 && record.json["outcomes"]?.arrayValue?.count == 3)
            let next = try #require(record.json["next"]?.stringValue)
            let rest = try await client.call(
                .get, "/api/sends/\(second.json["id"]?.stringValue ?? "")?limit=3&after=\(next)", bearer: key)
            #expect(rest.json["outcomes"]?.arrayValue?.count == 1 && rest.json["next"] == nil)
        }
    }

    @Test(
        "BadDeviceToken: a token recorded in the wrong environment is tried in the other, and corrected when accepted; otherwise removed"
    )
    func badDeviceTokenCorrection() async throws {
        try await ServerHarness.withServer { client, app in
            let emulator = try #require(app.emulator)
            let key = try await Self.key(app)
            // A development device that the app (say, a Release build with a development profile) reported as production.
            let mislabelled = testToken(0xb1)
            _ = try emulator.createDevice(token: mislabelled, environment: .development, topic: ServerHarness.topic)
            try await client.register(mislabelled, debug: false)
            // A development device that is dead too: BadDeviceToken in production, 410 in development.
            let dead = testToken(0xb2)
            _ = try emulator.createDevice(token: dead, environment: .development, topic: ServerHarness.topic)
            try emulator.markUnregistered(dead)
            try await client.register(dead, debug: false)

            let answer = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"tokens": ["\#(mislabelled.hex)", "\#(dead.hex)"]}, "alert": "hi"}"#, bearer: key)
            let outcomes = answer.json["outcomes"]?.arrayValue ?? []
            let corrected = try #require(outcomes.first { $0["token"]?.stringValue == mislabelled.hex })
            #expect(
                corrected["status"]?.stringValue == "accepted" && corrected["environment"]?.stringValue == "development"
            )
            #expect(corrected["action"]?.stringValue == "environmentCorrected")
            #expect(try await app.store.device(mislabelled)?.environment == .development)
            #expect(try emulator.inbox(for: mislabelled).count == 1)

            let removed = try #require(outcomes.first { $0["token"]?.stringValue == dead.hex })
            #expect(removed["reason"]?.stringValue == "BadDeviceToken" && removed["action"]?.stringValue == "removed")
            #expect(try await app.store.device(dead)?.invalidation?.reason == .badDeviceToken)
        }
    }

    @Test(
        "a large target answers 202 and is sent by the background worker; its outcomes page",
        arguments: Backend.available)
    func backgroundSend(backend: Backend) async throws {
        try await ServerHarness.withServer(
            backend,
            configure: {
                $0.limits.inlineSendLimit = 3
                $0.sending.pageSize = 4
            }
        ) { client, app in
            let key = try await Self.key(app)
            let tokens = (1...10).map { testToken($0) }
            for (index, token) in tokens.enumerated() {
                _ = try await app.store.upsert(
                    TokenRegistration(
                        token: token, topic: ServerHarness.topic,
                        environment: index % 2 == 0 ? .development : .production))
            }
            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"topic": "com.example.app"}, "alert": "to all"}"#, bearer: key)
            #expect(answer.status == .accepted, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue)
            #expect(answer.headers[.location] == "/api/sends/\(id)" && answer.json["targetCount"]?.intValue == 10)
            let record = try await app.worker.waitUntilFinished(try #require(SendID(id)))
            #expect(record.status == .completed && record.counts.accepted == 10)
            for token in tokens { #expect(try app.emulator!.inbox(for: token).count == 1) }
            var seen = 0
            var after: String?
            repeat {
                let page = try await client.call(
                    .get, "/api/sends/\(id)?limit=4" + (after.map { "&after=\($0)" } ?? ""), bearer: key)
                #expect(page.json["status"]?.stringValue == "completed")
                seen += page.json["outcomes"]?.arrayValue?.count ?? 0
                after = page.json["next"]?.stringValue
            } while after != nil
            #expect(seen == 10)
        }
    }

    @Test(
        "a background send a dead worker left behind resumes after its checkpoint when the server starts",
        arguments: Backend.available)
    func resumeAfterRestart(backend: Backend) async throws {
        let clock = ManualWallClock()
        let tokens = (1...6).map { testToken(0x60 + $0) }
        let sendID = SendID()
        try await ServerHarness.withServer(
            backend, clock: clock,
            prepare: { store in
                for token in tokens {
                    _ = try await store.upsert(
                        TokenRegistration(token: token, topic: ServerHarness.topic, environment: .development))
                }
                let job = #"{"target": {"topic": "com.example.app"}, "topic": "com.example.app", "alert": "resumed"}"#
                _ = try await store.createSend(
                    NewSend(
                        id: sendID, target: "every device", summary: "alert push", job: job, status: .queued,
                        targetCount: 6))
                // A worker claimed it, recorded the first two devices, and died: its lease ran out a second ago.
                _ = try #require(
                    try await store.claimNextQueuedSend(worker: "dead", leaseUntil: clock.now().addingTimeInterval(-1)))
                let firstTwo = try await store.devices(matching: .topic(ServerHarness.topic), after: nil, limit: 2)
                let outcomes = firstTwo.devices.map {
                    DeliveryOutcome(
                        token: $0.token, environment: .development, result: .accepted(apnsID: APNSID()), at: clock.now()
                    )
                }
                _ = try await store.recordOutcomes(outcomes, for: sendID, checkpoint: firstTwo.next)
            }
        ) { client, app in
            app.worker.wake()
            let record = try await app.worker.waitUntilFinished(sendID)
            #expect(record.status == .completed && record.counts.accepted == 6)
            let received = try tokens.map {
                app.emulator!.device($0) == nil ? 0 : try app.emulator!.inbox(for: $0).count
            }
            #expect(received == [0, 0, 1, 1, 1, 1], "the first two were sent before the crash")
        }
    }

    @Test("encrypt: true seals the alert with the app's content key; the device decrypts the original")
    func encryptedAlert() async throws {
        let contentKey = try ContentEncryptionKey.generate(id: "k1")
        try await ServerHarness.withServer(configure: { $0.apps[0].contentKey = contentKey }) { client, app in
            let key = try await Self.key(app)
            let token = testToken(0xc1)
            try await client.register(token, debug: true)
            let answer = try await client.call(
                .post, "/api/send",
                body:
                    #"{"target": {"token": "\#(token.hex)"}, "alert": {"title": "Secret", "body": "meet at 9"}, "encrypt": true}"#,
                bearer: key)
            #expect(answer.json["counts"]?["accepted"]?.intValue == 1, "\(answer)")
            let received = try Payload(jsonBytes: try #require(try app.emulator!.inbox(for: token).first).payload)
            #expect(received.hasEncryptedContent && received.aps.alert?.content.title == nil)
            let opened = try received.decryptingContent(using: [contentKey])
            #expect(opened.aps.alert == .content(AlertContent(title: "Secret", body: "meet at 9")))
        }
    }

    @Test("send ids are time-ordered UUIDs: a later send's id carries the server clock's time and sorts after")
    func timeOrderedIDs() async throws {
        let clock = ManualWallClock()
        try await ServerHarness.withServer(clock: clock) { client, app in
            let key = try await Self.key(app)
            let token = testToken(0xc2)
            try await client.register(token, debug: true)
            let body = #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#
            let first = try await client.call(.post, "/api/send", body: body, bearer: key)
            clock.advance(by: .milliseconds(5))
            let second = try await client.call(.post, "/api/send", body: body, bearer: key)
            let ids = [first, second].compactMap { $0.json["id"]?.stringValue }
            let uuids = ids.compactMap(UUID.init(uuidString:))
            #expect(uuids.count == 2, "\(first) \(second)")
            #expect(ids.sorted() == ids && ids[0] != ids[1], "\(ids)")
            let milliseconds = UInt64((clock.now().timeIntervalSince1970 * 1000).rounded())
            #expect(uuids.map(\.timeOrderedMilliseconds) == [milliseconds - 5, milliseconds])
        }
    }

    @Test("each token kind gets its push type: a voip send reaches only VoIP tokens, on the .voip topic")
    func pushTypePerKind() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await Self.key(app)
            let device = testToken(0xd1)
            let voip = testToken(0xd2)
            try await client.register(device, debug: true, extra: #", "userId": "carol""#)
            try await client.register(voip, debug: true, extra: #", "userId": "carol", "tokenKind": "voip""#)
            let answer = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "carol"}, "pushType": "voip", "payload": {"call": "x"}}"#, bearer: key)
            #expect(answer.json["targetCount"]?.intValue == 1, "\(answer)")
            let entry = try #require(try app.emulator!.inbox(for: voip).first)
            #expect(
                entry.pushType == "voip" && entry.topic == "com.example.app.voip"
                    && entry.payloadString == #"{"call":"x"}"#)
            #expect(app.emulator!.device(device) == nil)
        }
    }

    /// A send body that must fail, and its reason.
    struct BadSend: Sendable, CustomTestStringConvertible {
        let name: String
        let body: String
        let reason: String
        var status: HTTPResponse.Status = .badRequest

        var testDescription: String { name }
    }

    static let token = testToken(0xe1).hex
    static let badSends: [BadSend] = [
        BadSend(name: "not JSON", body: "{", reason: "invalidJSON"),
        BadSend(name: "no target", body: #"{"alert": "x"}"#, reason: "missingTarget"),
        BadSend(
            name: "two targets", body: #"{"target": {"user": "a", "tag": "b"}, "alert": "x"}"#, reason: "invalidField"),
        BadSend(name: "bad token", body: #"{"target": {"token": "xyz"}, "alert": "x"}"#, reason: "badDeviceToken"),
        BadSend(
            name: "bad token in a list", body: #"{"target": {"tokens": ["\#(token)", "12"]}, "alert": "x"}"#,
            reason: "badDeviceToken"),
        BadSend(name: "empty token list", body: #"{"target": {"tokens": []}, "alert": "x"}"#, reason: "invalidField"),
        BadSend(
            name: "unknown app", body: #"{"target": {"user": "a"}, "topic": "com.other", "alert": "x"}"#,
            reason: "unknownTopic"),
        BadSend(
            name: "unknown push type", body: #"{"target": {"user": "a"}, "pushType": "fax", "alert": "x"}"#,
            reason: "InvalidPushType"),
        BadSend(
            name: "priority 7", body: #"{"target": {"user": "a"}, "priority": 7, "alert": "x"}"#, reason: "BadPriority"),
        BadSend(
            name: "background at priority 10",
            body: #"{"target": {"user": "a"}, "pushType": "background", "priority": 10, "contentAvailable": true}"#,
            reason: "BadPriority"),
        BadSend(
            name: "collapse id of 65 bytes",
            body: #"{"target": {"user": "a"}, "collapseId": "\#(String(repeating: "c", count: 65))", "alert": "x"}"#,
            reason: "BadCollapseId"),
        BadSend(
            name: "payload over 4 KiB",
            body: #"{"target": {"user": "a"}, "alert": "\#(String(repeating: "x", count: 4100))"}"#,
            reason: "PayloadTooLarge"),
        BadSend(
            name: "an alert push that shows nothing", body: #"{"target": {"user": "a"}, "payload": {}}"#,
            reason: "nothingVisible"),
        BadSend(
            name: "raw payload and typed fields",
            body: #"{"target": {"user": "a"}, "payload": {"aps": {}}, "badge": 1}"#, reason: "invalidField"),
        BadSend(name: "badge is a string", body: #"{"target": {"user": "a"}, "badge": "1"}"#, reason: "invalidField"),
        BadSend(
            name: "bad language tag",
            body: #"{"target": {"user": "a"}, "alert": "x", "localizations": {"en_US": "y"}}"#, reason: "invalidField"),
        BadSend(
            name: "encrypt without a content key", body: #"{"target": {"user": "a"}, "alert": "x", "encrypt": true}"#,
            reason: "noContentKey"),
        BadSend(
            name: "unregistered token", body: #"{"target": {"token": "\#(token)"}, "alert": "x"}"#,
            reason: "unknownToken", status: .notFound),
        BadSend(
            name: "unknown environment", body: #"{"target": {"user": "a"}, "environment": "test", "alert": "x"}"#,
            reason: "invalidField"),
    ]

    @Test(
        "a send that would fail is refused first: 4xx with the reason (APNs's where there is one), nothing sent",
        arguments: badSends)
    func badSend(_ bad: BadSend) async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await Self.key(app)
            try await client.register(testToken(0xe2), debug: true, extra: #", "userId": "a""#)
            let answer = try await client.call(.post, "/api/send", body: bad.body, bearer: key)
            #expect(answer.status == bad.status, "\(answer)")
            #expect(answer.reason == bad.reason, "\(answer)")
            #expect(app.emulator!.counters.accepted == 0 && app.emulator!.counters.totalRejected == 0)
        }
    }

    /// A read that must fail.
    static let badReads: [(String, String, String)] = [
        ("/api/sends/not-a-uuid", "invalidField", "400"),
        ("/api/sends/\(UUID().uuidString)", "unknownSend", "404"),
        ("/api/sends/\(UUID().uuidString)?limit=0", "invalidField", "400"),
        ("/api/sends/\(UUID().uuidString)?after=x", "invalidField", "400"),
        ("/api/devices", "missingQuery", "400"),
        ("/api/devices?user=a&tag=b", "invalidField", "400"),
        ("/api/devices?user=a&environment=x", "invalidField", "400"),
        ("/api/devices?user=a&after=nonsense", "invalidField", "400"),
        ("/api/devices?user=a&limit=5000", "invalidField", "400"),
        ("/api/devices?user=a&includeInvalidated=maybe", "invalidField", "400"),
        ("/api/devices/xyz", "badDeviceToken", "400"),
        ("/api/devices/\(token)", "unknownToken", "404"),
    ]

    @Test("bad lookups are a 4xx with a reason", arguments: badReads.map { "\($0.0) \($0.1) \($0.2)" })
    func badRead(_ row: String) async throws {
        let parts = row.split(separator: " ").map(String.init)
        try await ServerHarness.withServer { client, app in
            let key = try await Self.key(app)
            let answer = try await client.call(.get, parts[0], bearer: key)
            #expect(String(answer.status.code) == parts[2] && answer.reason == parts[1], "\(answer)")
        }
    }
}
