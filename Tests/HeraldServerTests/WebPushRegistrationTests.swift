import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Web Push subscriptions registered through `POST /api/token` (docs/web-push.md, "Registering a subscription").
@Suite("Server: web push subscriptions in the registry", .timeLimit(.minutes(2)))
struct WebPushRegistrationTests {
    static let vapidKey = VAPIDKey.generate()
    static let endpoint = "https://web.push.apple.com/QGuQyavXutnMH6Ig2uYOJDwA"
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    /// The test app with a website.
    static func withWebApp(_ configuration: inout ServerConfiguration) {
        configuration.apps[0].webPush = try! AppConfiguration.WebPush(
            vapidKey: vapidKey, subject: "mailto:push@example.com", origin: "https://example.com")
    }

    static func body(endpoint: String = endpoint, p256dh: String = p256dh, auth: String = auth, extra: String = "")
        -> String
    {
        #"{"tokenKind": "webpush", "subscription": {"endpoint": "\#(endpoint)", "expirationTime": null, "keys": {"p256dh": "\#(p256dh)", "auth": "\#(auth)"}}\#(extra)}"#
    }

    @Test("a browser's subscription registers under its endpoint's SHA-256: 201, then 200; user and tags kept; keys never echoed",
        arguments: Backend.available)
    func registers(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: Self.withWebApp) { client, app in
            let token = WebPushSubscription.token(ofEndpoint: Self.endpoint)
            let first = try await client.call(
                .post, "/api/token", body: Self.body(extra: #", "userId": "ada", "tags": ["news"], "timeZone": "Europe/Paris""#))
            #expect(first.status == .created, "\(first)")
            #expect(first.json["token"]?.stringValue == token.hex && first.json["tokenKind"] == "webpush")
            #expect(first.json["pushService"] == "https://web.push.apple.com" && first.json["endpoint"]?.stringValue == Self.endpoint)
            #expect(first.json["environment"] == "production", "a subscription has no APNs environment: production")
            #expect(!first.body.contains(Self.auth) && !first.body.contains(Self.p256dh), "the keys stay in the registry")
            let again = try await client.call(.post, "/api/token", body: Self.body(extra: #", "userId": "ada""#))
            #expect(again.status == .ok)
            let stored = try #require(try await app.store.device(token))
            #expect(stored.webPush?.endpoint.absoluteString == Self.endpoint && stored.userID == "ada")
            #expect(stored.webPush?.keys.authText == Self.auth)
            // It leaves the registry as an APNs token does.
            #expect(try await client.call(.delete, "/api/token/\(token.hex)").status == .noContent)
            #expect(try await app.store.device(token) == nil)
        }
    }

    @Test("endpoints outside the push services, malformed keys and misfits are refused with 400 naming why, and store nothing",
        arguments: Backend.available)
    func refused(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: Self.withWebApp) { client, app in
            let cases: [(String, String, String)] = [
                (Self.body(endpoint: "https://127.0.0.1/steal"), "endpointNotAllowed", "127.0.0.1"),
                (Self.body(endpoint: "https://169.254.169.254/latest/meta-data"), "endpointNotAllowed", "169.254.169.254"),
                (Self.body(endpoint: "https://web.push.apple.com.evil.example/x"), "endpointNotAllowed", "evil.example"),
                (Self.body(endpoint: "https://web.push.apple.com:8443/x"), "endpointNotAllowed", "8443"),
                (Self.body(endpoint: "http://web.push.apple.com/x"), "invalidField", "subscription.endpoint"),
                (Self.body(endpoint: "https://user@web.push.apple.com/x"), "invalidField", "subscription.endpoint"),
                (Self.body(p256dh: "BCVx"), "invalidField", "subscription.keys"),
                (Self.body(auth: "not base64url!"), "invalidField", "subscription.keys"),
                (Self.body(auth: "AAAA"), "invalidField", "subscription.keys"),
                (#"{"tokenKind": "webpush"}"#, "missingSubscription", "PushSubscription.toJSON()"),
                (#"{"tokenKind": "webpush", "subscription": "https://web.push.apple.com/x"}"#, "invalidField", "subscription"),
                (#"{"tokenKind": "webpush", "subscription": {"keys": {}}}"#, "invalidField", "subscription.endpoint"),
                (Self.body(extra: #", "token": "\#(String(repeating: "ab", count: 32))""#), "invalidField", "SHA-256"),
                (
                    #"{"token": "\#(String(repeating: "ab", count: 32))", "debug": true, "subscription": {"endpoint": "\#(Self.endpoint)"}}"#,
                    "invalidField", "webpush"
                ),
                (Self.body(extra: #", "tags": "news""#), "invalidField", "tags"),
            ]
            for (body, reason, words) in cases {
                let answer = try await client.call(.post, "/api/token", body: body)
                #expect(answer.status == .badRequest, "\(body)")
                #expect(answer.json["reason"]?.stringValue == reason, "\(body) → \(answer)")
                #expect(answer.body.contains(words), "\(body) → \(answer)")
            }
            #expect(try await app.store.count(matching: .topic(ServerHarness.topic)) == 0)
        }
    }

    @Test("an app without a VAPID key takes no subscription; the allow-list is the configured one")
    func configuration() async throws {
        try await ServerHarness.withServer { client, app in
            let answer = try await client.call(.post, "/api/token", body: Self.body())
            #expect(answer.status == .badRequest && answer.json["reason"] == "webPushNotConfigured", "\(answer)")
            #expect(answer.body.contains("HERALD_VAPID_PRIVATE_KEY"))
            #expect(try await app.store.count(matching: .topic(ServerHarness.topic)) == 0)
        }
        try await ServerHarness.withServer(configure: { configuration in
            Self.withWebApp(&configuration)
            configuration.webPushHosts = PushServiceHosts(["push.example.net:8443"])
        }) { client, app in
            let own = try await client.call(.post, "/api/token", body: Self.body(endpoint: "https://push.example.net:8443/s/1"))
            #expect(own.status == .created, "\(own)")
            let apple = try await client.call(.post, "/api/token", body: Self.body())
            #expect(apple.status == .badRequest && apple.json["reason"] == "endpointNotAllowed", "only the configured list")
            #expect(try await app.store.count(matching: .topic(ServerHarness.topic)) == 1)
        }
    }
}
