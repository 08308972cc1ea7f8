import Foundation
import HTTPTypes
import HummingbirdTesting
import HeraldClient
import HeraldCore
import HeraldSending
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// The app half and the server half together: what an app linking HeraldClient sees of a live `herald serve`.
@Suite("Client SDK end to end with a live server", .timeLimit(.minutes(2)))
struct ClientSDKEndToEndTests {
    @Test("the SDK registers over HTTP; an encrypted send with a badge reaches the device; the extension decrypts it and counts")
    func registerSendDecryptCount() async throws {
        let contentKey = try ContentEncryptionKey.generate(id: "app-2026")
        try await ServerHarness.withServer(testing: .live, configure: { $0.apps[0].contentKey = contentKey }) { client, app in
            let port = try #require(client.client.port)
            let sdk = RegistrationClient(
                configuration: try .init(serverURL: URL(string: "http://127.0.0.1:\(port)")!, allowsInsecureHTTP: true),
                storage: InMemoryStorage())
            // The raw bytes an app receives in didRegisterForRemoteNotificationsWithDeviceToken.
            let tokenBytes = Data((0..<32).map { UInt8($0 &* 7 &+ 3) })
            let receipt = try await sdk.register(Registration(
                deviceToken: tokenBytes, environment: .development, topic: ServerHarness.topic, userID: "agent-13",
                preferredLanguages: ["en"], appVersion: "1.0"))
            #expect(receipt.isNew && receipt.registration?.userID == "agent-13")
            let token = try DeviceToken(data: tokenBytes)
            #expect(try await app.store.device(token)?.environment == .development)

            let secret = try await app.store.createAPIKey(name: "e2e", scopes: [.send]).secret.value
            let sent = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "agent-13"}, "alert": {"title": "Agent 13", "body": "The eagle lands at dawn"}, "badge": 2, "encrypt": true}"#,
                bearer: secret)
            #expect(sent.status.code == 200, "\(sent)")

            let emulator = try #require(app.emulator)
            let entry = try #require(try emulator.inbox(for: token).last)
            #expect(!entry.payloadString.contains("eagle"), "the text is not readable on the way")

            // The notification service extension's view: decode, decrypt, count the badge.
            let received = try Payload(jsonBytes: entry.payload)
            #expect(received.aps.mutableContent, "mutable-content routes it through the extension")
            let counter = BadgeCounter(storage: InMemoryStorage())
            _ = try counter.set(1)
            let processor = NotificationServiceProcessor(keys: [contentKey], badgeCounter: counter)
            let processed = await processor.process(received)
            #expect(processed.problems.isEmpty, "\(processed.problems)")
            #expect(processed.content.title == "Agent 13" && processed.content.body == "The eagle lands at dawn")
            #expect(processed.badge == 3)
            #expect(try counter.count() == 3, "a payload badge of 2 adds 2")

            // A later push with badge 0 resets the counter, and logout unregisters the token.
            _ = try await client.call(.post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "badge": 0}"#, bearer: secret)
            let reset = try Payload(jsonBytes: try #require(try emulator.inbox(for: token).last).payload)
            #expect(await processor.process(reset).badge == 0)
            #expect(try counter.count() == 0)
            #expect(try await sdk.unregister(token))
            #expect(try await app.store.device(token) == nil)
        }
    }

    @Test("preferences: the SDK reads and changes the person's choices, a change made offline is kept, shown and sent later, and sends follow them")
    func preferences() async throws {
        let configure: (inout ServerConfiguration) -> Void = {
            $0.apps[0].preferenceCategories = [
                try! PreferenceCategory(name: "orders", mode: .mandatory), try! PreferenceCategory(name: "social", mode: .on),
                try! PreferenceCategory(name: "marketing", mode: .off),
            ]
        }
        try await ServerHarness.withServer(testing: .live, configure: configure) { client, app in
            let port = try #require(client.client.port)
            let storage = InMemoryStorage()
            let sdk = RegistrationClient(
                configuration: try .init(serverURL: URL(string: "http://127.0.0.1:\(port)")!, allowsInsecureHTTP: true),
                storage: storage)
            let unregistered = await #expect(throws: RegistrationError.self) { try await sdk.preferences() }
            #expect(unregistered?.code == .invalidRegistration, "no token registered yet")
            let tokenBytes = Data((0..<32).map { UInt8($0 &* 3 &+ 1) })
            try await sdk.register(
                Registration(deviceToken: tokenBytes, environment: .development, topic: ServerHarness.topic, userID: "pat"))
            let token = try DeviceToken(data: tokenBytes)

            let initial = try await sdk.preferences()
            #expect(initial.subject == .user && initial.categories.map(\.name) == ["orders", "social", "marketing"])
            #expect(initial["marketing"]?.isEnabled == false && initial["social"]?.isEnabled == true)
            let changed = try await sdk.updatePreferences(["marketing": true])
            #expect(changed["marketing"]?.isEnabled == true && changed["marketing"]?.isChosen == true)
            let refused = await #expect(throws: RegistrationError.self) { try await sdk.updatePreferences(["orders": false]) }
            #expect(refused?.code == .rejected && refused?.reason == "invalidField" && refused?.isPendingSaved == false)

            // Offline: the same storage behind a server that does not answer (a port nothing listens on).
            let offline = RegistrationClient(
                configuration: try .init(
                    serverURL: URL(string: "http://127.0.0.1:9")!, allowsInsecureHTTP: true, retry: .never),
                storage: storage)
            let saved = await #expect(throws: RegistrationError.self) { try await offline.updatePreferences(["social": false]) }
            #expect(saved?.code == .gaveUp && saved?.isPendingSaved == true, "\(String(describing: saved))")
            let shown = try #require(offline.cachedPreferences())
            #expect(shown["social"]?.isEnabled == false && shown["marketing"]?.isEnabled == true, "the change shows at once")
            #expect(try await app.store.preferences(topic: ServerHarness.topic, subject: .user("pat")).choices == ["marketing": true])

            // Back online: the pending change goes, and sends follow the choices.
            let sent = try #require(try await sdk.sendPendingPreferences())
            #expect(sent["social"]?.isEnabled == false)
            #expect(try await sdk.sendPendingPreferences() == nil, "nothing left")
            #expect(
                try await app.store.preferences(topic: ServerHarness.topic, subject: .user("pat")).choices
                    == ["marketing": true, "social": false])
            let secret = try await app.store.createAPIKey(name: "e2e", scopes: [.send]).secret.value
            for category in ["social", "marketing", "orders"] {
                let answer = try await client.call(
                    .post, "/api/send",
                    body: #"{"target": {"user": "pat"}, "alert": "\#(category)", "preferenceCategory": "\#(category)"}"#,
                    bearer: secret)
                #expect(answer.status.code == 200, "\(answer)")
            }
            let inbox = try #require(app.emulator).inbox(for: token)
            #expect(
                inbox.compactMap { try? JSONValue(parsing: $0.payload)["aps"]?["alert"]?.stringValue } == ["marketing", "orders"])
        }
    }

    @Test("quiet hours: the SDK sets the person's own window, none, or the app's; a change made offline is kept, shown and sent later")
    func ownQuietHours() async throws {
        try await ServerHarness.withServer(testing: .live, configure: QuietHoursTests.configure) { client, app in
            let port = try #require(client.client.port)
            let storage = InMemoryStorage()
            let sdk = RegistrationClient(
                configuration: try .init(serverURL: URL(string: "http://127.0.0.1:\(port)")!, allowsInsecureHTTP: true),
                storage: storage)
            let tokenBytes = Data((0..<32).map { UInt8($0 &* 7 &+ 3) })
            try await sdk.register(
                Registration(deviceToken: tokenBytes, environment: .development, topic: ServerHarness.topic, userID: "noor"))
            let noor = PreferenceSubject.user("noor")

            let initial = try await sdk.preferences()
            #expect(
                initial.quietHours
                    == NotificationPreferences.QuietHours(window: "22:00-08:00", isChosen: false, appWindow: "22:00-08:00"))
            let own = try await sdk.updatePreferences([:], quietHours: .window("23:00-06:30"))
            #expect(own.quietHours?.window == "23:00-06:30" && own.quietHours?.isChosen == true)
            #expect(try await app.store.preferences(topic: ServerHarness.topic, subject: noor).quietHours?.description == "23:00-06:30")
            let refused = await #expect(throws: RegistrationError.self) {
                try await sdk.updatePreferences([:], quietHours: .window("06:30-06:30"))
            }
            #expect(refused?.code == .rejected && refused?.isPendingSaved == false)

            let offline = RegistrationClient(
                configuration: try .init(
                    serverURL: URL(string: "http://127.0.0.1:9")!, allowsInsecureHTTP: true, retry: .never),
                storage: storage)
            let saved = await #expect(throws: RegistrationError.self) {
                try await offline.updatePreferences(["social": false], quietHours: .off)
            }
            #expect(saved?.isPendingSaved == true, "\(String(describing: saved))")
            let shown = try #require(offline.cachedPreferences())
            #expect(shown.quietHours?.window == nil && shown.quietHours?.isChosen == true, "the change shows at once")

            let sent = try #require(try await sdk.sendPendingPreferences())
            #expect(sent.quietHours?.window == nil && sent.quietHours?.isChosen == true && sent["social"]?.isEnabled == false)
            #expect(try await app.store.preferences(topic: ServerHarness.topic, subject: noor).quietHours == .off)
            let back = try await sdk.updatePreferences([:], quietHours: .appWindow)
            #expect(back.quietHours?.window == "22:00-08:00" && back.quietHours?.isChosen == false)
            #expect(try await app.store.preferences(topic: ServerHarness.topic, subject: noor).quietHours == nil)
        }
    }

    @Test("receipts: the SDK registers, a send arrives, the extension reports it received and the app opened: the send counts 1 and 1; repeated and malformed reports change nothing")
    func receipts() async throws {
        try await ServerHarness.withServer(testing: .live) { client, app in
            let port = try #require(client.client.port)
            let configuration = try RegistrationClient.Configuration(
                serverURL: URL(string: "http://127.0.0.1:\(port)")!, allowsInsecureHTTP: true)
            // The App Group's storage, shared by the app and its notification service extension.
            let group = InMemoryStorage()
            let sdk = RegistrationClient(configuration: configuration, storage: group)
            let tokenBytes = Data((0..<32).map { UInt8($0 &* 5 &+ 9) })
            try await sdk.register(
                Registration(
                    deviceToken: tokenBytes, environment: .development, topic: ServerHarness.topic, userID: "reader"))
            let token = try DeviceToken(data: tokenBytes)
            #expect(try sdk.registeredToken() == token)

            let secret = try await app.store.createAPIKey(name: "e2e", scopes: [.send]).secret.value
            let sent = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "reader"}, "alert": {"title": "News"}, "mutableContent": true}"#,
                bearer: secret)
            let id = try #require(sent.json["id"]?.stringValue)
            let emulator = try #require(app.emulator)
            let entry = try #require(try emulator.inbox(for: token).last)
            let payload = try Payload(jsonBytes: entry.payload)
            #expect(payload.heraldSendID?.uuidString.lowercased() == id, "the notification names its send")

            // The extension, a process of its own: its client on the same storage, where the token is.
            let extensionClient = RegistrationClient(configuration: configuration, storage: group)
            let processor = NotificationServiceProcessor(receipts: ReceiptReporter(client: extensionClient))
            let processed = await processor.process(payload)
            #expect(processed.problems.isEmpty, "\(processed.problems)")
            #expect(try extensionClient.pendingReceiptCount() == 1, "queued before the content goes to the system")
            guard case .sent? = await processor.sendReceipts() else {
                Issue.record("the extension's receipt did not reach the server")
                return
            }
            // The app: the user taps the notification.
            let reporter = ReceiptReporter(client: sdk)
            guard case .sent = await reporter.responded(to: payload, with: .open) else {
                Issue.record("the app's receipt did not reach the server")
                return
            }
            func receipts() async throws -> JSONValue? {
                try await client.call(.get, "/api/sends/\(id)", bearer: secret).json["receipts"]
            }
            let counted: JSONValue = [
                "received": 1, "opened": 1, "actions": 0, "dismissed": 0, "receivedRate": 1.0, "openedRate": 1.0,
            ]
            #expect(try await receipts() == counted)

            // The same reports again (an answer lost on the way), and malformed ones, change nothing.
            _ = await processor.process(payload)
            _ = await processor.sendReceipts()
            _ = await reporter.responded(to: payload, with: .open)
            let malformed = try await client.call(
                .post, "/api/events",
                body: #"{"events": [{"type": "opened", "token": "\#(token.hex)", "sendId": "\#(id)", "at": "now"}]}"#)
            #expect(malformed.status == .badRequest && malformed.reason == "invalidField", "\(malformed)")
            #expect(try await receipts() == counted)
            #expect(try sdk.pendingReceiptCount() == 0)
        }
    }
}
