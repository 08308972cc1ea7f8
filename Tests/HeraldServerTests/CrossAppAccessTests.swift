import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Another app's resources, asked for through every door by callers limited to one app (issue 43, items 1 and 3;
/// docs/security.md): nothing of the other app is answered, named or changed.
@Suite("Server: no answer across apps", .timeLimit(.minutes(3)))
struct CrossAppAccessTests {
    static let alpha = ScopedKeyTests.alpha
    static let beta = ScopedKeyTests.beta

    /// Alpha and beta, each with a registration key of its own.
    static func twoAppsWithRegistrationKeys(_ configuration: inout ServerConfiguration) {
        configuration.apps = [
            AppConfiguration(bundleID: alpha, registrationKeys: ["alpha-key"]),
            AppConfiguration(bundleID: beta, registrationKeys: ["beta-key"]),
        ]
    }

    /// Two apps, each device registered, each app with one send to its device; the keys are made by the test.
    struct World {
        let alphaDevice = testToken(0xA7)
        let betaDevice = testToken(0xB7)
        var alphaSend = ""
        var betaSend = ""
    }

    static func world(_ client: ServerClient, _ app: HeraldApplication) async throws -> World {
        var world = World()
        try await client.register(world.alphaDevice, debug: false, extra: #", "topic": "\#(alpha)""#)
        try await client.register(world.betaDevice, debug: false, extra: #", "topic": "\#(beta)""#)
        let everything = try await app.store.createAPIKey(name: "ops", scopes: [.send, .admin])
        for (topic, device) in [(alpha, world.alphaDevice), (beta, world.betaDevice)] {
            let sent = try await client.call(
                .post, "/api/send", body: ScopedKeyTests.send(topic, token: device), bearer: everything.secret.value)
            let id = try #require(sent.json["id"]?.stringValue, "\(sent)")
            if topic == alpha { world.alphaSend = id } else { world.betaSend = id }
        }
        return world
    }

    @Test(
        "a console session of a key limited to alpha finds beta's delivery trace as unknown as a missing one, whatever its role",
        arguments: [[APIKeyScope.read], [.admin], [.send, .admin]])
    func consoleTrace(scopes: [APIKeyScope]) async throws {
        try await ServerHarness.withServer(configure: ScopedKeyTests.twoApps) { client, app in
            let world = try await Self.world(client, app)
            let limited = try await app.store.createAPIKey(name: "alpha-only", scopes: Set(scopes), apps: [Self.alpha])
            var console = ConsoleClient(client)
            try await console.signIn(limited.secret.value)

            let own = try await console.call(.get, "/console/sends/\(world.alphaSend)/devices/\(world.alphaDevice.hex)")
            #expect(own.status == .ok, "\(own.status)")
            let other = try await console.call(.get, "/console/sends/\(world.betaSend)/devices/\(world.betaDevice.hex)")
            let missing = try await console.call(.get, "/console/sends/\(SendID())/devices/\(world.betaDevice.hex)")
            #expect(other.status == .notFound, "beta's trace was answered \(other.status)")
            #expect(other.status == missing.status)
            #expect(!other.body.contains(world.betaDevice.hex) && !other.body.contains(Self.beta))
            // Alpha's send asked about beta's device: the send is seen, the device lends it nothing.
            let crossed = try await console.call(.get, "/console/sends/\(world.alphaSend)/devices/\(world.betaDevice.hex)")
            #expect(crossed.status == .ok && crossed.body.contains("notTargeted") && !crossed.body.contains(Self.beta))
        }
    }

    @Test("the API's trace and the console's are the one check: beta's send is unknown to alpha's key through both")
    func apiTrace() async throws {
        try await ServerHarness.withServer(configure: ScopedKeyTests.twoApps) { client, app in
            let world = try await Self.world(client, app)
            let limited = try await app.store.createAPIKey(name: "alpha-reader", scopes: [.read], apps: [Self.alpha])
            let other = try await client.call(
                .get, "/api/sends/\(world.betaSend)/devices/\(world.betaDevice.hex)", bearer: limited.secret.value)
            #expect(other.status == .notFound && other.reason == "unknownSend", "\(other)")
            let own = try await client.call(
                .get, "/api/sends/\(world.alphaSend)/devices/\(world.alphaDevice.hex)", bearer: limited.secret.value)
            #expect(own.status == .ok && own.json["verdict"]?["code"] != nil, "\(own)")
        }
    }

    @Test(
        "a registration key of alpha asking about beta's token gets what an unregistered token gets, and beta's token stays")
    func registrationKeyOracle() async throws {
        try await ServerHarness.withServer(configure: Self.twoAppsWithRegistrationKeys) { client, app in
            let betaDevice = testToken(0xB8)
            let unknown = testToken(0xC8)
            let registered = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(betaDevice.hex)", "debug": false, "topic": "\#(Self.beta)"}"#,
                headers: [.registrationKey: "beta-key"])
            #expect(registered.status == .created, "\(registered)")
            let asAlpha: HTTPFields = [.registrationKey: "alpha-key"]

            for (method, path, body) in [
                (HTTPRequest.Method.delete, "/api/token/%@", nil),
                (.get, "/api/preferences/%@", nil),
                (.put, "/api/preferences/%@", #"{"categories": {"social": false}}"#),
            ] as [(HTTPRequest.Method, String, String?)] {
                let other = try await client.call(
                    method, String(format: path, betaDevice.hex), body: body, headers: asAlpha)
                let missing = try await client.call(method, String(format: path, unknown.hex), body: body, headers: asAlpha)
                #expect(other.status == .notFound && other.reason == "unknownToken", "\(method) \(path): \(other)")
                #expect(other.status == missing.status && other.reason == missing.reason && other.body == missing.body)
                #expect(!other.body.contains(Self.beta))
            }
            #expect(try await app.store.device(betaDevice)?.isActive == true, "beta's token is still registered")

            let events = #"{"events": [{"type": "received", "token": "\#(betaDevice.hex)", "sendId": "\#(SendID())", "at": "2026-12-03T08:00:00Z"}]}"#
            let reported = try await client.call(.post, "/api/events", body: events, headers: asAlpha)
            #expect(reported.status == .ok && reported.json["ignored"] == 1, "\(reported)")
        }
    }

    @Test("errors name only the caller's apps: a send without topic, an unknown topic, a registration without topic")
    func errorsNameOnlyTheCallersApps() async throws {
        try await ServerHarness.withServer(configure: Self.twoAppsWithRegistrationKeys) { client, app in
            let limited = try await app.store.createAPIKey(name: "alpha-backend", scopes: [.send], apps: [Self.alpha])
            let token = testToken(0xA9)
            let noTopic = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#,
                bearer: limited.secret.value)
            #expect(noTopic.status == .badRequest && noTopic.reason == "missingTopic", "\(noTopic)")
            #expect(noTopic.body.contains(Self.alpha) && !noTopic.body.contains(Self.beta), "\(noTopic.body)")
            let unknownTopic = try await client.call(
                .post, "/api/send", body: ScopedKeyTests.send("com.nobody.app", token: token), bearer: limited.secret.value)
            #expect(unknownTopic.reason == "unknownTopic" && !unknownTopic.body.contains(Self.beta), "\(unknownTopic)")
            let registration = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": false}"#,
                headers: [.registrationKey: "alpha-key"])
            #expect(registration.reason == "missingTopic" && !registration.body.contains(Self.beta), "\(registration)")

            let everything = try await app.store.createAPIKey(name: "ops", scopes: [.send])
            let unlimited = try await client.call(
                .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "hi"}"#,
                bearer: everything.secret.value)
            #expect(unlimited.body.contains(Self.alpha) && unlimited.body.contains(Self.beta), "a key for every app sees both")
        }
    }

    @Test("a read key sees a webhook endpoint's URL without its query; an admin key sees it whole")
    func webhookURLs() async throws {
        try await ServerHarness.withServer { client, app in
            let admin = try await app.store.createAPIKey(name: "ops", scopes: [.admin])
            let reader = try await app.store.createAPIKey(name: "viewer", scopes: [.read])
            let created = try await client.call(
                .post, "/api/webhooks",
                body: #"{"url": "https://hooks.example.com/herald?token=s3cret", "events": ["send.completed"]}"#,
                bearer: admin.secret.value)
            let id = try #require(created.json["endpoint"]?["id"]?.stringValue, "\(created)")
            for path in ["/api/webhooks", "/api/webhooks/\(id)"] {
                let read = try await client.call(.get, path, bearer: reader.secret.value)
                #expect(read.status == .ok && read.body.contains("https://hooks.example.com/herald"), "\(read)")
                #expect(!read.body.contains("s3cret"), "\(path) showed the query to a read key")
                let whole = try await client.call(.get, path, bearer: admin.secret.value)
                #expect(whole.body.contains("s3cret"))
            }
        }
    }
}
