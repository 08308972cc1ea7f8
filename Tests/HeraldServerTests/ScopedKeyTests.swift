import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Keys scoped to apps and an environment, expiring keys, their last use, and key management through the admin API
/// (issue 29, item 1; docs/security.md).
@Suite("Server: keys scoped to apps", .timeLimit(.minutes(3)))
struct ScopedKeyTests {
    static let alpha = "com.alpha.app"
    static let beta = "com.beta.app"

    static func twoApps(_ configuration: inout ServerConfiguration) {
        configuration.apps = [AppConfiguration(bundleID: alpha), AppConfiguration(bundleID: beta)]
    }

    static func send(_ topic: String, token: DeviceToken, environment: String? = nil) -> String {
        let env = environment.map { #", "environment": "\#($0)""# } ?? ""
        return #"{"target": {"token": "\#(token.hex)"}, "topic": "\#(topic)", "alert": "hi"\#(env)}"#
    }

    @Test("a key for alpha sends to alpha only, lists and reads alpha's sends only, and cannot find beta's by id", arguments: Backend.available)
    func sendsStayInTheirApp(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: Self.twoApps) { client, app in
            let alphaDevice = testToken(0xA1)
            let betaDevice = testToken(0xB1)
            try await client.register(alphaDevice, debug: false, extra: #", "topic": "\#(Self.alpha)""#)
            try await client.register(betaDevice, debug: false, extra: #", "topic": "\#(Self.beta)""#)
            let alphaKey = try await app.store.createAPIKey(name: "alpha-backend", scopes: [.send], apps: [Self.alpha])
            let everything = try await app.store.createAPIKey(name: "ops", scopes: [.send, .admin])

            let refused = try await client.call(
                .post, "/api/send", body: Self.send(Self.beta, token: betaDevice), bearer: alphaKey.secret.value)
            #expect(refused.status == .forbidden && refused.reason == "appNotAllowed", "\(refused)")
            #expect(refused.body.contains(Self.beta), "403 names the app the request named")
            #expect((try? app.emulator?.inbox(for: betaDevice))?.isEmpty ?? true, "nothing reached beta's device")

            let sent = try await client.call(
                .post, "/api/send", body: Self.send(Self.alpha, token: alphaDevice), bearer: alphaKey.secret.value)
            #expect(sent.status == .ok, "\(sent)")
            let betaSend = try await client.call(
                .post, "/api/send", body: Self.send(Self.beta, token: betaDevice), bearer: everything.secret.value)
            #expect(betaSend.status == .ok, "\(betaSend)")
            let alphaID = try #require(sent.json["id"]?.stringValue)
            let betaID = try #require(betaSend.json["id"]?.stringValue)

            let listed = try await client.call(.get, "/api/sends", bearer: alphaKey.secret.value)
            #expect(listed.json["sends"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [alphaID], "\(listed)")
            let all = try await client.call(.get, "/api/sends", bearer: everything.secret.value)
            #expect(all.json["sends"]?.arrayValue?.count == 2)

            #expect(try await client.call(.get, "/api/sends/\(alphaID)", bearer: alphaKey.secret.value).status == .ok)
            let hidden = try await client.call(.get, "/api/sends/\(betaID)", bearer: alphaKey.secret.value)
            let missing = try await client.call(.get, "/api/sends/\(SendID())", bearer: alphaKey.secret.value)
            #expect(hidden.status == .notFound && hidden.reason == "unknownSend", "\(hidden)")
            #expect(
                hidden.status == missing.status && hidden.reason == missing.reason && !hidden.body.contains(Self.beta),
                "another app's send answers as a send that does not exist")
            let cancel = try await client.call(.delete, "/api/sends/\(betaID)", bearer: alphaKey.secret.value)
            #expect(cancel.status == .notFound && cancel.reason == "unknownSend")
        }
    }

    @Test("a key for one environment must say it, and cannot act in the other", arguments: Backend.available)
    func environmentScope(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: Self.twoApps) { client, app in
            let device = testToken(0xA2)
            try await client.register(device, debug: false, extra: #", "topic": "\#(Self.alpha)""#)
            let key = try await app.store.createAPIKey(
                name: "alpha-production", scopes: [.send], apps: [Self.alpha], environment: .production)
            let both = try await client.call(.post, "/api/send", body: Self.send(Self.alpha, token: device), bearer: key.secret.value)
            #expect(both.status == .forbidden && both.reason == "environmentNotAllowed", "\(both)")
            let development = try await client.call(
                .post, "/api/send", body: Self.send(Self.alpha, token: device, environment: "development"),
                bearer: key.secret.value)
            #expect(development.status == .forbidden && development.reason == "environmentNotAllowed")
            let production = try await client.call(
                .post, "/api/send", body: Self.send(Self.alpha, token: device, environment: "production"),
                bearer: key.secret.value)
            #expect(production.status == .ok, "\(production)")
        }
    }

    @Test("devices: a scoped admin key finds its app's devices only; another app's token is unknown")
    func devices() async throws {
        try await ServerHarness.withServer(configure: Self.twoApps) { client, app in
            try await client.register(testToken(0xA3), debug: false, extra: #", "topic": "\#(Self.alpha)", "userId": "u""#)
            try await client.register(testToken(0xB3), debug: false, extra: #", "topic": "\#(Self.beta)", "userId": "u""#)
            let key = try await app.store.createAPIKey(name: "alpha-admin", scopes: [.admin], apps: [Self.alpha])
            let byUser = try await client.call(.get, "/api/devices?user=u", bearer: key.secret.value)
            #expect(byUser.json["devices"]?.arrayValue?.compactMap { $0["topic"]?.stringValue } == [Self.alpha], "\(byUser)")
            let otherApp = try await client.call(.get, "/api/devices?topic=\(Self.beta)", bearer: key.secret.value)
            #expect(otherApp.status == .forbidden && otherApp.reason == "appNotAllowed")
            #expect(try await client.call(.get, "/api/devices/\(testToken(0xA3).hex)", bearer: key.secret.value).status == .ok)
            let hidden = try await client.call(.get, "/api/devices/\(testToken(0xB3).hex)", bearer: key.secret.value)
            #expect(hidden.status == .notFound && hidden.reason == "unknownToken")
        }
    }

    @Test("an expired key stops at once, even while remembered; each key shows when it was last used", arguments: Backend.available)
    func expiryAndLastUse(backend: Backend) async throws {
        let clock = ManualWallClock()
        try await ServerHarness.withServer(backend, clock: clock) { client, app in
            let key = try await app.store.createAPIKey(
                name: "short", scopes: [.send], expiresAt: clock.now().addingTimeInterval(60), at: clock.now())
            let admin = try await app.store.createAPIKey(name: "ops", scopes: [.admin], at: clock.now())
            #expect(try await client.call(.get, "/api/sends", bearer: key.secret.value).status == .ok)
            let listed = try await client.call(.get, "/api/keys", bearer: admin.secret.value)
            let shown = try #require(listed.json["keys"]?.arrayValue?.first { $0["name"]?.stringValue == "short" })
            #expect(shown["lastUsedAt"]?.stringValue == RFC3339.string(clock.now()), "\(shown)")
            #expect(shown["state"]?.stringValue == "active" && shown["expiresAt"] != nil)
            clock.advance(by: .seconds(60))
            let expired = try await client.call(.get, "/api/sends", bearer: key.secret.value)
            #expect(expired.status == .unauthorized && expired.reason == "expiredAPIKey", "\(expired)")
            let after = try await client.call(.get, "/api/keys", bearer: admin.secret.value)
            #expect(after.json["keys"]?.arrayValue?.first { $0["name"]?.stringValue == "short" }?["state"]?.stringValue == "expired")
        }
    }

    @Test("the admin API makes scoped keys, lists them without secrets, revokes them; a scoped admin key may not manage keys")
    func adminAPI() async throws {
        try await ServerHarness.withServer(configure: Self.twoApps) { client, app in
            let admin = try await app.store.createAPIKey(name: "ops", scopes: [.admin])
            let made = try await client.call(
                .post, "/api/keys",
                body: #"{"name": "alpha-backend", "scopes": ["send"], "apps": ["\#(Self.alpha)"], "environment": "production", "expires": "90d"}"#,
                bearer: admin.secret.value)
            #expect(made.status == .created, "\(made)")
            let secret = try #require(made.json["secret"]?.stringValue)
            let key = try #require(made.json["key"])
            #expect(key["apps"] == .array([.string(Self.alpha)]) && key["environment"]?.stringValue == "production")
            #expect(key["scopes"] == .array(["send"]) && key["state"]?.stringValue == "active" && key["expiresAt"] != nil)
            let listed = try await client.call(.get, "/api/keys", bearer: admin.secret.value)
            #expect(!listed.body.contains(secret) && listed.json["keys"]?.arrayValue?.count == 2)
            let unknownApp = try await client.call(
                .post, "/api/keys", body: #"{"name": "x", "apps": ["com.nobody.app"]}"#, bearer: admin.secret.value)
            #expect(unknownApp.status == .badRequest && unknownApp.reason == "unknownTopic", "\(unknownApp)")
            let past = try await client.call(
                .post, "/api/keys", body: #"{"name": "x", "expires": "2001-01-01T00:00:00Z"}"#, bearer: admin.secret.value)
            #expect(past.status == .badRequest && past.reason == "invalidField")
            #expect(try await app.store.apiKeys().count == 2, "refused requests made nothing")

            let scopedAdmin = try await app.store.createAPIKey(name: "alpha-admin", scopes: [.admin], apps: [Self.alpha])
            let escalation = try await client.call(
                .post, "/api/keys", body: #"{"name": "everything", "scopes": ["admin"]}"#, bearer: scopedAdmin.secret.value)
            #expect(escalation.status == .forbidden && escalation.reason == "unscopedKeyRequired")

            let id = try #require(key["id"]?.stringValue)
            let revoked = try await client.call(.delete, "/api/keys/\(id)", bearer: admin.secret.value)
            #expect(revoked.status == .ok && revoked.json["state"]?.stringValue == "revoked", "\(revoked)")
            let gone = try await client.call(.get, "/api/sends", bearer: secret)
            #expect(gone.status == .unauthorized && gone.reason == "invalidAPIKey", "revoked here: at once")
            #expect(try await client.call(.delete, "/api/keys/\(UUID())", bearer: admin.secret.value).status == .notFound)
        }
    }

    @Test("herald doctor warns about send keys without apps on a server of several apps, and only then")
    func doctorWarns() async throws {
        let store = try StoreFactory.open(url: "sqlite::memory:")
        try await StoreConformance.withRunning(store) { store in
            var configuration = ServerConfiguration(databaseURL: "sqlite::memory:")
            Self.twoApps(&configuration)
            let doctor = Doctor(configuration: configuration)
            #expect(await doctor.unscopedKeysCheck(store) == nil, "no key: nothing to say")
            _ = try await store.createAPIKey(name: "alpha-backend", scopes: [.send], apps: [Self.alpha])
            _ = try await store.createAPIKey(name: "ops", scopes: [.admin])
            #expect(await doctor.unscopedKeysCheck(store) == nil, "a scoped send key and an admin key are as meant")
            _ = try await store.createAPIKey(name: "old-backend", scopes: [.send])
            let check = try #require(await doctor.unscopedKeysCheck(store))
            #expect(check.name == "api keys" && check.status == .warning, "\(check)")
            #expect(check.message.contains("old-backend") && !check.message.contains("alpha-backend"))
            configuration.apps = [AppConfiguration(bundleID: Self.alpha)]
            #expect(await Doctor(configuration: configuration).unscopedKeysCheck(store) == nil, "one app: every key is its")
        }
    }
}
