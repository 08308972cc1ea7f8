import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// Issue 29's "the audit log of a scripted session matches what was done": every kind of change once, through the
/// API (an admin key, an app's registration call, an expired key's refusals), a console session and the `herald`
/// binary on the same database; then `GET /api/audit` lists exactly those changes, with their actors, apps and
/// subjects, and no secret or whole token.
extension AuditLogTests {
    /// One expected entry: kind, actor's kind and name, app, and the subject when the test knows it.
    struct Expected: Equatable, CustomStringConvertible {
        let kind: String
        let actorKind: String
        let actor: String
        let app: String?
        let subject: String?

        var description: String { "\(kind) by \(actorKind) \(actor) on \(app ?? "-") \(subject ?? "")" }
    }

    @Test("every kind of change once, through the API, the console and the CLI: the log holds exactly what was done", arguments: Backend.available)
    func everyKindOnce(backend: Backend) async throws {
        let database = try TestDatabase.make(backend)
        let configure: (inout ServerConfiguration) -> Void = {
            var alpha = AppConfiguration(bundleID: Self.alpha)
            alpha.preferenceCategories = [try! PreferenceCategory(name: "marketing", mode: .on)]
            $0.apps = [alpha, AppConfiguration(bundleID: Self.beta)]
        }
        do {
            let app = try await ServerHarness.build(databaseURL: database.url, logger: nil, configure: configure)
            try await app.test(.router) { testClient in
                try await Self.script(ServerClient(client: testClient), app, databaseURL: database.url)
            }
        } catch {
            await database.cleanup()
            throw error
        }
        await database.cleanup()
    }

    private static func script(_ client: ServerClient, _ app: HeraldApplication, databaseURL: String) async throws {
        let devices = (0..<4).map { testToken(0xD0 + $0) }
        for device in devices {
            try await client.register(device, debug: false, extra: #", "topic": "\#(alpha)", "userId": "u""#)
        }
        let admin = try await app.store.createAPIKey(name: "ops", scopes: [.send, .admin])
        let stale = try await app.store.createAPIKey(
            name: "stale", scopes: [.send], expiresAt: Date().addingTimeInterval(-60), at: Date().addingTimeInterval(-3600))
        let bearer = admin.secret.value
        func made(_ method: HTTPRequest.Method, _ uri: String, _ body: String?) async throws -> ServerClient.Answer {
            let answer = try await client.call(method, uri, body: body, bearer: bearer)
            #expect((200..<300).contains(answer.status.code), "\(method) \(uri): \(answer)")
            return answer
        }

        // Through the API.
        let key = try #require(
            try await made(.post, "/api/keys", #"{"name": "alpha-backend", "apps": ["\#(alpha)"]}"#).json["key"]?["id"]?.stringValue)
        let later = RFC3339.string(Date().addingTimeInterval(3600))
        let send = try #require(
            try await made(
                .post, "/api/send",
                #"{"target": {"user": "u"}, "topic": "\#(alpha)", "alert": {"title": "Secret sale"}, "sendAt": "\#(later)"}"#
            ).json["id"]?.stringValue)
        _ = try await made(.post, "/api/activities", AuthorizationMatrixTests.startBody("match-1"))
        let channel = try #require(
            try await made(.post, "/api/channels", #"{"topic": "\#(alpha)", "environment": "production"}"#)
                .json["channel"]?["id"]?.stringValue)
        let encodedChannel = channel.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? channel
        _ = try await made(.post, "/api/channels/\(encodedChannel)/broadcast", #"{"contentState": {"score": "1-0"}}"#)
        let webhook = try #require(
            try await made(
                .post, "/api/webhooks",
                #"{"topic": "\#(alpha)", "url": "http://127.0.0.1:9/hook?token=receiver-secret", "events": ["send.completed"]}"#
            ).json["endpoint"]?["id"]?.stringValue)
        _ = try await made(.patch, "/api/webhooks/\(webhook)", #"{"description": "billing"}"#)
        _ = try await made(.patch, "/api/webhooks/\(webhook)", #"{"paused": true}"#)
        _ = try await made(.put, "/api/devices/\(devices[0].hex)/preferences", #"{"categories": {"marketing": false}}"#)
        #expect(try await client.call(.delete, "/api/token/\(devices[1].hex)").status == .noContent)
        for _ in 0..<2 {
            let refused = try await client.call(.get, "/api/sends", bearer: stale.secret.value)
            #expect(refused.status == .unauthorized && refused.reason == "expiredAPIKey", "\(refused)")
        }

        // Through the console.
        var console = ConsoleClient(client)
        #expect(try await console.signIn(bearer).status == .seeOther)
        for (path, form) in [
            ("/console/sends/\(send)/cancel", [("_csrf", console.csrf)]),
            ("/console/activities/end", [("_csrf", console.csrf), ("id", "match-1"), ("app", alpha)]),
            ("/console/channels/delete", [("_csrf", console.csrf), ("id", channel)]),
            ("/console/webhooks/\(webhook)/resume", [("_csrf", console.csrf)]),
            ("/console/devices/\(devices[2].hex)/remove", [("_csrf", console.csrf)]),
            ("/console/sign-out", [("_csrf", console.csrf)]),
        ] {
            let answer = try await console.call(.post, path, form: form)
            #expect(answer.status == .seeOther, "\(path): \(answer)")
        }

        // Through the CLI, on the same database, with the server's apps.
        let binary = ProcessRunner.productsDirectory.appendingPathComponent("herald").path
        let directory = try TemporaryDirectory(prefix: "herald-audit-cli")
        let config = directory.url.appendingPathComponent("herald.json").path
        try Data(#"{"apps": [{"topic": "\#(alpha)"}, {"topic": "\#(beta)"}]}"#.utf8).write(to: URL(fileURLWithPath: config))
        let newcomer = testToken(0xD9)
        for arguments in [
            ["tokens", "add", newcomer.hex, "--debug", "--topic", alpha, "--config", config],
            ["webhooks", "rotate-secret", webhook], ["webhooks", "replay", webhook], ["webhooks", "delete", webhook],
            ["tokens", "remove", devices[3].hex], ["keys", "revoke", key],
        ] {
            let ran = try await ProcessRunner.run(binary, arguments + ["--database-url", databaseURL])
            #expect(ran.status == 0, "herald \(arguments.joined(separator: " ")): \(ran.standardError)")
        }

        // The log, oldest first.
        let read = try await client.call(.get, "/api/audit?limit=100", bearer: bearer)
        let entries = try #require(read.json["entries"]?.arrayValue).reversed()
        let known = Set([key, send, "match-1", channel, webhook, newcomer.redacted] + devices.map(\.redacted))
        let rows = entries.map { entry in
            let subject = entry["subject"]?.stringValue
            return Expected(
                kind: entry["kind"]?.stringValue ?? "", actorKind: entry["actor"]?["kind"]?.stringValue ?? "",
                actor: entry["actor"]?["name"]?.stringValue ?? "", app: entry["app"]?.stringValue,
                subject: subject.flatMap { known.contains($0) ? $0 : nil })
        }
        let cli = rows.last?.actor ?? ""
        #expect(cli.hasPrefix("herald CLI ("), "\(cli)")
        let expected: [Expected] = [
            .init(kind: "key.created", actorKind: "api-key", actor: "ops", app: alpha, subject: key),
            .init(kind: "send.created", actorKind: "api-key", actor: "ops", app: alpha, subject: send),
            .init(kind: "activity.started", actorKind: "api-key", actor: "ops", app: alpha, subject: "match-1"),
            .init(kind: "channel.created", actorKind: "api-key", actor: "ops", app: alpha, subject: channel),
            // A broadcast's subject is the send it made.
            .init(kind: "channel.broadcast", actorKind: "api-key", actor: "ops", app: alpha, subject: nil),
            .init(kind: "webhook.created", actorKind: "api-key", actor: "ops", app: alpha, subject: webhook),
            .init(kind: "webhook.changed", actorKind: "api-key", actor: "ops", app: alpha, subject: webhook),
            .init(kind: "webhook.paused", actorKind: "api-key", actor: "ops", app: alpha, subject: webhook),
            .init(kind: "device.preferences-changed", actorKind: "api-key", actor: "ops", app: alpha, subject: devices[0].redacted),
            .init(kind: "device.removed", actorKind: "app", actor: alpha, app: alpha, subject: devices[1].redacted),
            .init(kind: "key.expired", actorKind: "api-key", actor: "stale", app: nil, subject: nil),
            .init(kind: "console.signed-in", actorKind: "console", actor: "ops", app: nil, subject: nil),
            .init(kind: "send.cancelled", actorKind: "console", actor: "ops", app: alpha, subject: send),
            .init(kind: "activity.ended", actorKind: "console", actor: "ops", app: alpha, subject: "match-1"),
            .init(kind: "channel.deleted", actorKind: "console", actor: "ops", app: alpha, subject: channel),
            .init(kind: "webhook.resumed", actorKind: "console", actor: "ops", app: alpha, subject: webhook),
            .init(kind: "device.removed", actorKind: "console", actor: "ops", app: alpha, subject: devices[2].redacted),
            .init(kind: "console.signed-out", actorKind: "console", actor: "ops", app: nil, subject: nil),
            .init(kind: "device.registered", actorKind: "cli", actor: cli, app: alpha, subject: newcomer.redacted),
            .init(kind: "webhook.secret-rotated", actorKind: "cli", actor: cli, app: alpha, subject: webhook),
            .init(kind: "webhook.replayed", actorKind: "cli", actor: cli, app: alpha, subject: webhook),
            .init(kind: "webhook.deleted", actorKind: "cli", actor: cli, app: alpha, subject: webhook),
            .init(kind: "device.removed", actorKind: "cli", actor: cli, app: alpha, subject: devices[3].redacted),
            .init(kind: "key.revoked", actorKind: "cli", actor: cli, app: nil, subject: key),
        ]
        #expect(Array(rows) == expected, "\(Array(rows))")
        #expect(Set(expected.map(\.kind)) == Set(ConsoleAuditPage.auditKinds.map(\.rawValue)), "the console filters by every kind")
        for secret in [admin.secret.value, stale.secret.value, "receiver-secret", "Secret sale", newcomer.hex] + devices.map(\.hex) {
            #expect(!read.body.contains(secret), "the log holds \(secret)")
        }
    }
}
