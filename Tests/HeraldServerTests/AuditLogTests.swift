import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// The audit log (issue 29, item 3): a scripted session through the API and the console, then the log read back
/// through the admin API holds exactly what was done, by whom, with no secret and no whole token.
@Suite("Server: the audit log", .timeLimit(.minutes(3)))
struct AuditLogTests {
    static let alpha = "com.alpha.app"
    static let beta = "com.beta.app"

    @Test("the log of a scripted session matches what was done, newest first; a scoped admin key reads its app's entries only", arguments: Backend.available)
    func scriptedSession(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: {
            $0.apps = [AppConfiguration(bundleID: Self.alpha), AppConfiguration(bundleID: Self.beta)]
        }) { client, app in
            let device = testToken(0xC1)
            try await client.register(device, debug: false, extra: #", "topic": "\#(Self.alpha)", "userId": "u""#)
            let admin = try await app.store.createAPIKey(name: "ops", scopes: [.send, .admin])

            // The session.
            let made = try await client.call(
                .post, "/api/keys", body: #"{"name": "alpha-backend", "apps": ["\#(Self.alpha)"]}"#, bearer: admin.secret.value)
            let alphaSecret = try #require(made.json["secret"]?.stringValue)
            let alphaKeyID = try #require(made.json["key"]?["id"]?.stringValue)
            let sent = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"token": "\#(device.hex)"}, "topic": "\#(Self.alpha)", "alert": {"title": "Secret sale"}}"#,
                bearer: alphaSecret)
            let sendID = try #require(sent.json["id"]?.stringValue)
            let later = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "u"}, "topic": "\#(Self.alpha)", "alert": "x", "sendAt": "\#(RFC3339.string(Date().addingTimeInterval(3600)))"}"#,
                bearer: alphaSecret)
            let laterID = try #require(later.json["id"]?.stringValue)
            #expect(try await client.call(.delete, "/api/sends/\(laterID)", bearer: alphaSecret).status == .ok)
            let channel = try await client.call(
                .post, "/api/channels", body: #"{"topic": "\#(Self.beta)", "environment": "production"}"#,
                bearer: admin.secret.value)
            let channelID = try #require(channel.json["channel"]?["id"]?.stringValue)
            let encoded = channelID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? channelID
            #expect(try await client.call(.delete, "/api/channels/\(encoded)", bearer: admin.secret.value).status == .ok)
            #expect(try await client.call(.delete, "/api/keys/\(alphaKeyID)", bearer: admin.secret.value).status == .ok)
            var console = ConsoleClient(client)
            #expect(try await console.signIn(admin.secret.value).status == .seeOther)
            try await console.call(.post, "/console/sign-out", form: [("_csrf", console.csrf)])
            let refused = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u"}, "topic": "\#(Self.beta)", "alert": "x"}"#,
                bearer: alphaSecret)
            #expect(refused.status == .unauthorized, "a refused request changes nothing, so it is not in the log")

            // The log.
            let read = try await client.call(.get, "/api/audit", bearer: admin.secret.value)
            #expect(read.status == .ok, "\(read)")
            let entries = try #require(read.json["entries"]?.arrayValue).reversed()
            let rows = entries.map { entry in
                [entry["kind"]?.stringValue ?? "", entry["actor"]?["name"]?.stringValue ?? "", entry["app"]?.stringValue ?? "-"]
            }
            #expect(rows == [
                ["key.created", "ops", Self.alpha],
                ["send.created", "alpha-backend", Self.alpha],
                ["send.created", "alpha-backend", Self.alpha],
                ["send.cancelled", "alpha-backend", Self.alpha],
                ["channel.created", "ops", Self.beta],
                ["channel.deleted", "ops", Self.beta],
                ["key.revoked", "ops", "-"],
                ["console.signed-in", "ops", "-"],
                ["console.signed-out", "ops", "-"],
            ], "\(rows)")
            let subjects = entries.map { $0["subject"]?.stringValue ?? "-" }
            #expect(subjects[1] == sendID && subjects[2] == laterID && subjects[3] == laterID)
            #expect(subjects[4] == channelID && subjects[6] == alphaKeyID)
            #expect(entries.allSatisfy { $0["at"]?.stringValue != nil && $0["id"]?.stringValue != nil })
            #expect(entries.map { $0["actor"]?["kind"]?.stringValue }.suffix(2) == ["console", "console"])
            #expect(!read.body.contains(alphaSecret) && !read.body.contains(admin.secret.value), "no secret")
            #expect(!read.body.contains(device.hex), "no whole token")
            #expect(!read.body.contains("Secret sale"), "no notification text")

            let cancelled = try await client.call(.get, "/api/audit?kind=send.cancelled", bearer: admin.secret.value)
            #expect(cancelled.json["entries"]?.arrayValue?.count == 1)
            let byKey = try await client.call(.get, "/api/audit?key=\(alphaKeyID)", bearer: admin.secret.value)
            #expect(byKey.json["entries"]?.arrayValue?.count == 3)
            let page = try await client.call(.get, "/api/audit?limit=4", bearer: admin.secret.value)
            let next = try #require(page.json["next"]?.stringValue)
            let rest = try await client.call(.get, "/api/audit?limit=10&after=\(next)", bearer: admin.secret.value)
            #expect(rest.json["entries"]?.arrayValue?.count == 5 && rest.json["next"] == nil)

            let betaAdmin = try await app.store.createAPIKey(name: "beta-admin", scopes: [.admin], apps: [Self.beta])
            let betaView = try await client.call(.get, "/api/audit", bearer: betaAdmin.secret.value)
            #expect(betaView.json["entries"]?.arrayValue?.compactMap { $0["app"]?.stringValue } == [Self.beta, Self.beta])
            let asked = try await client.call(.get, "/api/audit?app=\(Self.alpha)", bearer: betaAdmin.secret.value)
            #expect(asked.status == .forbidden && asked.reason == "appNotAllowed")
        }
    }

    @Test("console roles: a viewer reads pages but changes nothing, an operator sends but manages no keys, both without keys' and audit pages")
    func consoleRoles() async throws {
        try await ServerHarness.withServer { client, app in
            let viewerKey = try await app.store.createAPIKey(name: "viewer", scopes: [.read])
            let operatorKey = try await app.store.createAPIKey(name: "operator", scopes: [.send])
            var viewer = ConsoleClient(client)
            #expect(try await viewer.signIn(viewerKey.secret.value).status == .seeOther)
            let overview = try await viewer.call(.get, "/console")
            #expect(overview.status == .ok && !overview.body.contains("/console/keys") && !overview.body.contains("/console/compose"))
            #expect(try await viewer.call(.get, "/console/sends").status == .ok)
            #expect(try await viewer.call(.get, "/console/keys").status == .forbidden)
            #expect(try await viewer.call(.get, "/console/audit").status == .forbidden)
            let send = try await viewer.send(#"{"target": {"user": "u"}, "alert": "x"}"#)
            #expect(send.status == .forbidden && send.reason == "insufficientScope", "\(send)")
            #expect(try await viewer.call(.post, "/console/keys", form: [("_csrf", viewer.csrf), ("name", "x"), ("scope", "admin")]).status == .forbidden)
            #expect(try await app.store.apiKeys().count == 2, "the viewer made no key")

            var operatorSession = ConsoleClient(client)
            #expect(try await operatorSession.signIn(operatorKey.secret.value).status == .seeOther)
            #expect(try await operatorSession.call(.get, "/console/compose").status == .ok)
            #expect(try await operatorSession.send(#"{"target": {"user": "u"}, "alert": "x"}"#).status == .ok)
            #expect(try await operatorSession.call(.get, "/console/keys").status == .forbidden)
            let scoped = try await app.store.createAPIKey(name: "scoped", scopes: [.admin], apps: [ServerHarness.topic])
            var scopedSession = ConsoleClient(client)
            #expect(try await scopedSession.signIn(scoped.secret.value).status == .seeOther)
            #expect(try await scopedSession.call(.get, "/console/keys").status == .forbidden, "keys need an admin without limits")
        }
    }
}
