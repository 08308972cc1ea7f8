import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// `POST /api/send` reaching Web Push subscriptions beside device tokens, through the in-process emulator's push
/// service (docs/web-push.md, "Sending").
@Suite("Server: sends reach web push subscriptions", .timeLimit(.minutes(3)))
struct WebPushSendTests {
    /// A browser's subscription made at the emulator's push service for the test app's VAPID key, registered for a
    /// user; its emulator id and registry token.
    static func subscribe(
        _ client: ServerClient, _ emulator: APNSEmulator, user: String, extra: String = ""
    ) async throws -> (id: String, token: DeviceToken) {
        let made = try emulator.webPush.subscribe(
            applicationServerKey: WebPushRegistrationTests.vapidKey.publicKeyText)
        let answer = try await client.call(
            .post, "/api/token",
            body: WebPushRegistrationTests.body(
                endpoint: made.endpoint, p256dh: made.p256dh, auth: made.auth, extra: #", "userId": "\#(user)""# + extra))
        #expect(answer.status == .created, "\(answer)")
        return (made.id, WebPushSubscription.token(ofEndpoint: made.endpoint))
    }

    /// A server whose test app has a website, with its in-process emulator and an API key that sends.
    static func withWebServer(
        _ backend: Backend, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (ServerClient, HeraldApplication, APNSEmulator, String) async throws -> Void
    ) async throws {
        try await ServerHarness.withServer(
            backend,
            configure: {
                WebPushRegistrationTests.withWebApp(&$0)
                configure(&$0)
            }
        ) { client, app in
            try await body(client, app, try #require(app.emulator), try await SendTests.key(app))
        }
    }

    /// The decrypted JSON of each message in a subscription's inbox.
    static func messages(_ emulator: APNSEmulator, _ id: String) throws -> [JSONValue] {
        try emulator.webPush.messages(id).map { try JSONValue(parsing: $0.payload) }
    }

    @Test(
        "a send to a user with an iPhone token and a Safari subscription puts one notification in each inbox: the web one decrypted, declarative, with the send's link and receipt key; the dry run counts the subscription",
        arguments: Backend.available)
    func reachesBoth(backend: Backend) async throws {
        try await Self.withWebServer(backend) { client, app, emulator, key in
            let phone = testToken(0xb1)
            try await client.register(phone, debug: false, extra: #", "userId": "ada""#)
            let (web, webToken) = try await Self.subscribe(client, emulator, user: "ada")
            _ = try await Self.subscribe(client, emulator, user: "bob")

            let send =
                #"{"target": {"user": "ada"}, "alert": {"title": "Order shipped", "body": "It leaves today"}, "badge": 3, "collapseId": "order-42", "data": {"navigate": "https://example.com/orders/42"}}"#
            let dryRun = try await client.call(.post, "/api/send?dryRun=true", body: send, bearer: key)
            #expect(dryRun.json["targetCount"] == 2 && dryRun.json["webSubscriptionCount"] == 1, "\(dryRun)")

            let answer = try await client.call(.post, "/api/send", body: send, bearer: key)
            #expect(answer.status == .ok, "\(answer)")
            #expect(answer.json["counts"]?["accepted"] == 2 && answer.json["targetCount"] == 2, "\(answer)")
            let sendID = try #require(answer.json["id"]?.stringValue)
            #expect(try SendTests.titles(emulator, phone) == ["Order shipped"])
            let messages = try Self.messages(emulator, web)
            #expect(messages.count == 1)
            let message = try #require(messages.first)
            #expect(message["web_push"] == 8030 && message["app_badge"] == 3)
            #expect(message["notification"]?["title"] == "Order shipped")
            #expect(message["notification"]?["body"] == "It leaves today")
            #expect(message["notification"]?["navigate"] == "https://example.com/orders/42")
            #expect(message["notification"]?["tag"] == "order-42")
            #expect(message["herald"]?["send"]?.stringValue == sendID, "the service worker's receipts name the send")
            let received = try #require(try emulator.webPush.messages(web).first)
            #expect(received.topic == "order-42" && received.urgency == "high")
            #expect(received.subject == "mailto:push@example.com")

            // The outcome is the subscription's, under its token, and the trace shows it.
            let outcomes = try #require(answer.json["outcomes"]?.arrayValue)
            #expect(
                outcomes.contains { $0["token"]?.stringValue == webToken.hex && $0["status"] == "accepted" }, "\(outcomes)")

            // A localized variant carries its language as lang; the default variant none.
            let (french, _) = try await Self.subscribe(client, emulator, user: "claire", extra: #", "preferredLanguages": ["fr-FR", "en"]"#)
            let localized = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "claire"}, "alert": {"title": "Hello"}, "localizations": {"fr": {"title": "Bonjour"}}}"#,
                bearer: key)
            #expect(localized.json["counts"]?["accepted"] == 1, "\(localized)")
            let frenchMessage = try #require(try Self.messages(emulator, french).first)
            #expect(frenchMessage["notification"]?["title"] == "Bonjour" && frenchMessage["notification"]?["lang"] == "fr")
            #expect(message["notification"]?["lang"] == nil, "the default variant's language is not known")

            // Without a link of its own, the notification opens the app's web origin.
            let plain = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "ada"}, "alert": {"title": "Hi"}}"#, bearer: key)
            #expect(plain.json["counts"]?["accepted"] == 2, "\(plain)")
            #expect(try Self.messages(emulator, web).last?["notification"]?["navigate"] == "https://example.com")
        }
    }

    @Test(
        "a link that is not https is refused with 400 before anything is sent; background and encrypted sends leave subscriptions out",
        arguments: Backend.available)
    func whatReachesTheWeb(backend: Backend) async throws {
        try await Self.withWebServer(backend, configure: {
            $0.apps[0].contentKey = try! ContentEncryptionKey.generate(id: "k1")
        }) { client, app, emulator, key in
            let (web, _) = try await Self.subscribe(client, emulator, user: "ada")

            let badLink = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "ada"}, "alert": {"title": "x"}, "data": {"navigate": "javascript:alert(1)"}}"#,
                bearer: key)
            #expect(badLink.status == .badRequest && badLink.json["reason"] == "invalidField", "\(badLink)")
            #expect(badLink.json["error"]?.stringValue?.contains("data.navigate") == true, "\(badLink)")

            let background = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "ada"}, "contentAvailable": true}"#, bearer: key)
            #expect(background.json["targetCount"] == 0, "a background push has no web equivalent: \(background)")
            let encrypted = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "ada"}, "alert": {"title": "secret"}, "encrypt": true}"#,
                bearer: key)
            #expect(encrypted.json["targetCount"] == 0, "\(encrypted)")
            #expect(try Self.messages(emulator, web).isEmpty)
        }
    }

    @Test(
        "what a browser cannot show is refused at acceptance with the way to leave subscriptions out; transports narrows a send to devices or subscriptions; a send to named tokens is checked at each",
        arguments: Backend.available)
    func checkedAtAcceptance(backend: Backend) async throws {
        try await Self.withWebServer(backend) { client, app, emulator, key in
            let phone = testToken(0xb2)
            try await client.register(phone, debug: false, extra: #", "userId": "ada""#)
            let (web, webToken) = try await Self.subscribe(client, emulator, user: "ada")
            let big = String(repeating: "x", count: 3_930)
            let refusals: [(String, String, String)] = [
                (#""payload": {"aps": {"alert": {"title-loc-key": "SHIPPED"}}}"#, "webNotRenderable", "localization key"),
                (#""alert": {"title": "Hi", "body": "\#(big)"}"#, "webPayloadTooLarge", "3993"),
                (#""alert": {"title": "Hi"}, "localizations": {"de": {"title": "Hallo", "body": "\#(big)"}}"#, "webPayloadTooLarge", "its de variant"),
                (#""alert": {"title": "Hi"}, "data": {"actions": [{"action": "a", "title": "A"}]}"#, "invalidField", "data.actions"),
                (#""alert": {"title": "Hi"}, "data": {"dir": "sideways"}"#, "invalidField", "data.dir"),
                (#""alert": {"title": "Hi"}, "transports": ["fax"]"#, "invalidField", "transports"),
                (#""alert": {"title": "Hi"}, "transports": []"#, "invalidField", "transports"),
            ]
            for (fields, reason, mention) in refusals {
                let answer = try await client.call(
                    .post, "/api/send", body: #"{"target": {"user": "ada"}, \#(fields)}"#, bearer: key)
                #expect(answer.status == .badRequest && answer.json["reason"]?.stringValue == reason, "\(fields): \(answer)")
                let text = answer.json["error"]?.stringValue?.replacingOccurrences(of: ",", with: "") ?? ""
                #expect(text.contains(mention), "\(answer)")
                if reason.hasPrefix("web") { #expect(text.contains(#""transports": ["apns"]"#), "\(answer)") }
            }
            #expect((try? emulator.inbox(for: phone))?.isEmpty ?? true, "nothing sent")
            #expect(try Self.messages(emulator, web).isEmpty)

            // Leaving subscriptions out, the same send reaches the phone; and the other way round.
            let devicesOnly = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "ada"}, "payload": {"aps": {"alert": {"title-loc-key": "SHIPPED"}}}, "transports": ["apns"]}"#,
                bearer: key)
            #expect(devicesOnly.json["targetCount"] == 1 && devicesOnly.json["counts"]?["accepted"] == 1, "\(devicesOnly)")
            let webOnly = try await client.call(
                .post, "/api/send?dryRun=true",
                body: #"{"target": {"user": "ada"}, "alert": {"title": "Hi"}, "transports": ["webpush"]}"#, bearer: key)
            #expect(webOnly.json["targetCount"] == 1 && webOnly.json["webSubscriptionCount"] == 1, "\(webOnly)")

            // Named tokens are not refused for a browser: the subscription among them fails with the reason.
            let named = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"tokens": ["\#(phone.hex)", "\#(webToken.hex)"]}, "payload": {"aps": {"alert": {"title-loc-key": "SHIPPED"}}}}"#,
                bearer: key)
            #expect(named.json["counts"]?["accepted"] == 1 && named.json["counts"]?["failed"] == 1, "\(named)")
            let failed = named.json["outcomes"]?.arrayValue?.first { $0["token"]?.stringValue == webToken.hex }
            #expect(failed?["message"]?.stringValue?.contains("localization key") == true, "\(named)")
            #expect(try Self.messages(emulator, web).isEmpty)
        }
    }

    @Test(
        "an app with the classic format sends its subscriptions the notification without web_push, its buttons and an rtl variant's direction",
        arguments: Backend.available)
    func classicFormat(backend: Backend) async throws {
        try await Self.withWebServer(backend, configure: {
            $0.apps[0].webPush?.format = .classic
            $0.apps[0].webPush?.origin = nil
        }) { client, app, emulator, key in
            let (web, _) = try await Self.subscribe(
                client, emulator, user: "ada", extra: #", "preferredLanguages": ["ar-EG"]"#)
            let answer = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "ada"}, "alert": {"title": "Hi"}, "localizations": {"ar": {"title": "مرحبا"}}, "data": {"actions": [{"action": "reply", "title": "Reply"}]}}"#,
                bearer: key)
            #expect(answer.json["counts"]?["accepted"] == 1, "\(answer)")
            let message = try #require(try Self.messages(emulator, web).first)
            #expect(message["web_push"] == nil, "a classic message is the service worker's to show")
            #expect(message["notification"]?["title"] == "مرحبا" && message["notification"]?["dir"] == "rtl")
            #expect(message["notification"]?["lang"] == "ar" && message["notification"]?["navigate"] == nil)
            #expect(message["notification"]?["actions"]?.arrayValue?.first?["action"] == "reply")
        }
    }

    @Test(
        "a subscription the push service answers 410 or 404 leaves the registry, its outcome saying so; the others are sent",
        arguments: Backend.available)
    func goneSubscriptionsLeave(backend: Backend) async throws {
        try await Self.withWebServer(backend) { client, app, emulator, key in
            let (unsubscribed, unsubscribedToken) = try await Self.subscribe(client, emulator, user: "ada")
            let (removed, removedToken) = try await Self.subscribe(client, emulator, user: "ada")
            let (kept, keptToken) = try await Self.subscribe(client, emulator, user: "ada")
            try emulator.webPush.unsubscribe(unsubscribed)
            #expect(emulator.webPush.remove(removed))

            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "ada"}, "alert": {"title": "Hi"}}"#, bearer: key)
            #expect(answer.json["counts"]?["accepted"] == 1 && answer.json["counts"]?["rejected"] == 2, "\(answer)")
            let outcomes = try #require(answer.json["outcomes"]?.arrayValue)
            for (token, status) in [(unsubscribedToken, 410), (removedToken, 404)] {
                let outcome = try #require(outcomes.first { $0["token"]?.stringValue == token.hex }, "\(outcomes)")
                #expect(outcome["httpStatus"]?.intValue == status && outcome["action"] == "removed", "\(outcome)")
                #expect(try await app.store.device(token)?.isActive == false, "a gone subscription leaves the sends")
            }
            #expect(try await app.store.device(keptToken)?.isActive == true)
            let metrics = try await client.call(.get, "/metrics").body
            for line in [
                #"herald_web_push_outcomes_total{outcome="accepted",reason=""} 1"#,
                #"herald_web_push_outcomes_total{outcome="rejected",reason="410 Unsubscribed"} 1"#,
                #"herald_web_push_outcomes_total{outcome="rejected",reason="404 NotFound"} 1"#,
                #"herald_token_removals_total{reason="Unsubscribed"} 1"#,
            ] {
                #expect(metrics.contains(line), "web messages are counted apart: \(line)")
            }
            #expect(
                metrics.contains(#"herald_send_outcomes_total{outcome="accepted",reason=""} 0"#),
                "APNs's counter has none of them")
            let again = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "ada"}, "alert": {"title": "Again"}}"#, bearer: key)
            #expect(again.json["targetCount"] == 1, "\(again)")
            #expect(try Self.messages(emulator, kept).map { $0["notification"]?["title"] } == ["Hi", "Again"])
        }
    }

    @Test(
        "under 429, 503 and reset streams at the push service a background send reaches every subscription: none lost, none twice",
        arguments: Backend.available)
    func faultsLoseNothing(backend: Backend) async throws {
        try await Self.withWebServer(backend, configure: {
            $0.sending.retry = RetryPolicy(initialBackoff: .milliseconds(5), maximumBackoff: .milliseconds(50))
            $0.limits.inlineSendLimit = 10
        }) { client, app, emulator, key in
            var ids: [String] = []
            for n in 0..<60 { ids.append(try await Self.subscribe(client, emulator, user: "u\(n)", extra: #", "tags": ["news"]"#).id) }
            var faults = FaultConfiguration()
            faults.tooManyRequests = 0.15
            faults.serviceUnavailable = 0.1
            faults.refusedStreamProbability = 0.05
            try emulator.setFaults(faults)

            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"tag": "news"}, "alert": {"title": "News"}}"#, bearer: key)
            #expect(answer.status == .accepted, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue)
            app.worker.wake()
            let finished = try await app.worker.waitUntilFinished(try #require(SendID(id)))
            #expect(finished.status == .completed && finished.counts.accepted == 60, "\(finished)")
            let counts = try ids.map { try emulator.webPush.messages($0).count }
            #expect(counts.allSatisfy { $0 == 1 }, "each subscription once: \(counts)")
            #expect(emulator.counters.faults.values.reduce(0, +) > 0, "faults were injected: \(emulator.counters.faults)")
        }
    }
}
