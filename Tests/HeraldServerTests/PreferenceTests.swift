import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Notification categories and a person's preferences: set by the app, read by an admin, applied at send time.
@Suite("Server: notification preferences", .timeLimit(.minutes(3)))
struct PreferenceTests {
    static let topic = "com.example.app"

    /// `orders` mandatory, `social` on by default, `marketing` off by default; sends without a category are `social`.
    static func configure(_ configuration: inout ServerConfiguration) {
        configuration.apps[0].preferenceCategories = [
            try! PreferenceCategory(name: "orders", mode: .mandatory),
            try! PreferenceCategory(name: "social", mode: .on),
            try! PreferenceCategory(name: "marketing", mode: .off),
        ]
        configuration.apps[0].defaultPreferenceCategory = "social"
    }

    static func category(_ answer: ServerClient.Answer, _ index: Int) -> JSONValue? {
        answer.json["categories"]?.arrayValue.flatMap { index < $0.count ? $0[index] : nil }
    }

    @Test(
        "a person's choices, set through the app's route, decide which of their devices each category reaches",
        arguments: Backend.available)
    func choicesDecideDelivery(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let bearer = try await SendTests.key(app)
            let aliceA = testToken(1)
            let aliceB = testToken(2)
            let installationOnly = testToken(3)
            let bare = testToken(4)
            try await client.register(aliceA, debug: true, extra: #", "userId": "alice""#)
            try await client.register(aliceB, debug: false, extra: #", "userId": "alice""#)
            try await client.register(
                installationOnly, debug: true, extra: #", "installationId": "6F1C3A52-2B1E-4A7B-9C55-0D9E2B1A7F00""#)
            try await client.register(bare, debug: true)

            // Defaults before anyone chose.
            let initial = try await client.call(.get, "/api/preferences/\(aliceA.hex)")
            #expect(initial.status == .ok, "\(initial)")
            #expect(initial.json["subject"]?.stringValue == "user" && initial.json["updatedAt"] == .null)
            #expect(
                initial.json["categories"]?.arrayValue?.map { "\($0["name"]!.stringValue!)=\($0["enabled"]!)" }
                    == ["orders=true", "social=true", "marketing=false"])

            // Alice turns social off on one device: it holds on both; the installation turns marketing on.
            let off = try await client.call(
                .put, "/api/preferences/\(aliceA.hex)", body: #"{"categories": {"social": false}}"#)
            #expect(off.status == .ok, "\(off)")
            #expect(Self.category(off, 1)?["enabled"] == .bool(false) && Self.category(off, 1)?["chosen"] == .bool(true))
            let onB = try await client.call(.get, "/api/preferences/\(aliceB.hex)")
            #expect(Self.category(onB, 1)?["enabled"] == .bool(false), "the user's choice: \(onB)")
            let on = try await client.call(
                .put, "/api/preferences/\(installationOnly.hex)", body: #"{"categories": {"marketing": true}}"#)
            #expect(on.status == .ok && on.json["subject"]?.stringValue == "installation", "\(on)")

            func send(_ category: String?) async throws -> ServerClient.Answer {
                let named = category.map { #", "preferenceCategory": "\#($0)""# } ?? ""
                let answer = try await client.call(
                    .post, "/api/send", body: #"{"target": {"topic": "\#(Self.topic)"}, "alert": "hi"\#(named)}"#,
                    bearer: bearer)
                #expect(answer.status == .ok, "\(answer)")
                return answer
            }
            func counts(_ answer: ServerClient.Answer) -> [Int?] {
                [answer.json["targetCount"]?.intValue, answer.json["suppressed"]?["preference"]?.intValue]
            }
            #expect(counts(try await send("orders")) == [4, 0], "mandatory: every device")
            #expect(counts(try await send(nil)) == [2, 2], "the default category, social: not alice")
            let marketing = try await send("marketing")
            #expect(counts(marketing) == [1, 3], "off by default: the installation")
            let id = try #require(marketing.json["id"]?.stringValue)
            let status = try await client.call(.get, "/api/sends/\(id)", bearer: bearer)
            #expect(counts(status) == [1, 3], "\(status)")
            let metrics = try await client.call(.get, "/metrics")
            #expect(metrics.body.contains(#"herald_notifications_suppressed_total{reason="preference"} 5"#), "\(metrics.body)")
            #expect(try emulator.inbox(for: aliceA).count == 1 && emulator.inbox(for: aliceB).count == 1)
            #expect(try emulator.inbox(for: installationOnly).count == 3)
            #expect(try emulator.inbox(for: bare).count == 2)

            // A background send counts the same when accepted, and its worker applies the rule.
            let paced = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"topic": "\#(Self.topic)"}, "alert": "paced", "rate": 1000, "preferenceCategory": "marketing"}"#,
                bearer: bearer)
            #expect(paced.status == .accepted && counts(paced) == [1, 3], "\(paced)")
            let pacedID = try #require(paced.json["id"]?.stringValue.flatMap(SendID.init))
            let finished = try await app.worker.waitUntilFinished(pacedID)
            #expect(finished.counts.accepted == 1 && finished.suppressed.preference == 3, "\(finished)")
            #expect(try emulator.inbox(for: installationOnly).count == 4 && emulator.inbox(for: bare).count == 2)

            // The dry run counts what each rule leaves.
            let dry = try await client.call(
                .post, "/api/send?dryRun=true",
                body: #"{"target": {"topic": "\#(Self.topic)"}, "alert": "hi", "preferenceCategory": "marketing"}"#,
                bearer: bearer)
            #expect(dry.status == .ok && counts(dry) == [1, 3], "\(dry)")

            // Back to the default with null; the admin route reads the same.
            let reset = try await client.call(
                .put, "/api/preferences/\(aliceB.hex)", body: #"{"categories": {"social": null}}"#)
            #expect(Self.category(reset, 1)?["enabled"] == .bool(true) && Self.category(reset, 1)?["chosen"] == .bool(false))
            let admin = try await client.call(.get, "/api/devices/\(aliceA.hex)/preferences", bearer: bearer)
            #expect(admin.status == .ok && admin.body == reset.body, "\(admin)")
            let adminSet = try await client.call(
                .put, "/api/devices/\(bare.hex)/preferences", body: #"{"categories": {"social": false}}"#,
                bearer: bearer)
            #expect(adminSet.status == .ok && adminSet.json["subject"]?.stringValue == "token", "\(adminSet)")
            #expect(try await send("social").json["targetCount"]?.intValue == 3)
        }
    }

    @Test("bad preference requests are refused with what to change, and change nothing", arguments: Backend.available)
    func refusals(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: Self.configure) { client, app in
            let bearer = try await SendTests.key(app)
            let token = testToken(1)
            try await client.register(token, debug: true, extra: #", "userId": "alice""#)
            let path = "/api/preferences/\(token.hex)"
            let cases: [(String, String)] = [
                (#"{"categories": {"orders": false}}"#, "categories.orders"),
                (#"{"categories": {"sports": false}}"#, "categories.sports"),
                (#"{"categories": {"social": "no"}}"#, "categories.social"),
                (#"{"categories": {"social": false}, "extra": 1}"#, "extra"),
                (#"{"categories": []}"#, "categories"),
                (#"{}"#, "categories"),
            ]
            for (body, field) in cases {
                let answer = try await client.call(.put, path, body: body)
                #expect(answer.status == .badRequest && answer.reason == "invalidField", "\(body): \(answer)")
                #expect(answer.json["error"]?.stringValue?.contains(field) == true, "\(body): \(answer)")
            }
            let unknown = try await client.call(.put, "/api/preferences/\(testToken(9).hex)", body: #"{"categories": {}}"#)
            #expect(unknown.status == .notFound && unknown.reason == "unknownToken", "\(unknown)")
            let malformed = try await client.call(.get, "/api/preferences/not-a-token")
            #expect(malformed.status == .badRequest, "\(malformed)")
            let noKey = try await client.call(.get, "/api/devices/\(token.hex)/preferences")
            #expect(noKey.status == .unauthorized, "\(noKey)")
            let unknownCategory = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "alice"}, "alert": "x", "preferenceCategory": "sports"}"#,
                bearer: bearer)
            #expect(unknownCategory.status == .badRequest && unknownCategory.reason == "invalidField", "\(unknownCategory)")
            let stored = try await app.store.preferences(topic: Self.topic, subject: .user("alice"))
            #expect(stored == StoredPreferences(), "nothing was recorded")
        }
    }

    @Test("an app with registration keys must present one to read or change preferences", arguments: [Backend.sqlite])
    func registrationKey(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: { configuration in
            Self.configure(&configuration)
            configuration.apps[0].registrationKeys = ["app-key-1"]
        }) { client, _ in
            let token = testToken(1)
            let registered = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": true}"#,
                headers: [.registrationKey: "app-key-1"])
            #expect(registered.status == .created, "\(registered)")
            let without = try await client.call(.get, "/api/preferences/\(token.hex)")
            #expect(without.status == .unauthorized || without.status == .forbidden, "\(without)")
            let with = try await client.call(
                .get, "/api/preferences/\(token.hex)", headers: [.registrationKey: "app-key-1"])
            #expect(with.status == .ok, "\(with)")
        }
    }

    @Test("an admin's change through the API and the console's form go through one use case: the audit log says both in the same words (the console once wrote marketing=off)")
    func oneWayToChange() async throws {
        try await ServerHarness.withServer(configure: Self.configure) { client, app in
            let token = testToken(0x61)
            try await client.register(token, debug: true, extra: #", "userId": "alice""#)
            let admin = try await app.store.createAPIKey(name: "admin", scopes: [.admin])
            let api = try await client.call(
                .put, "/api/devices/\(token.hex)/preferences",
                body: #"{"categories": {"marketing": true}}"#, bearer: admin.secret.value)
            #expect(api.status == .ok, "\(api)")
            var session = ConsoleClient(client)
            try await session.signIn(admin.secret.value)
            let form = try await session.call(
                .post, "/console/preferences",
                form: [
                    (ConsoleAuthority.csrfField, session.csrf), ("topic", Self.topic), ("subject", "u:alice"),
                    ("category.marketing", "off"), ("category.social", "default"),
                ])
            #expect(form.status == .seeOther, "\(form.status)")
            let entries = try await app.store.auditEntries(
                AuditQuery(action: .preferencesChanged), after: nil, limit: 10
            ).entries
            #expect(entries.map(\.detail) == ["marketing off, social default", "marketing on"], "\(entries.map(\.detail))")
        }
    }
}
