import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

@Suite("Console pages", .timeLimit(.minutes(2)))
struct ConsolePageTests {
    static let pages = [
        "/console", "/console/compose", "/console/sends", "/console/devices", "/console/activities",
        "/console/channels", "/console/keys", "/console/webhooks", "/console/emulator",
    ]

    @Test("every console answer carries the security headers, with no inline script allowed")
    func securityHeaders() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let paths =
                Self.pages + [
                    "/console/sign-in", "/console/assets/console.css", "/console/assets/compose.js",
                    "/console/nowhere", "/console/devices/zz", "/console/sends/\(SendID())", "/console/sign-in/x",
                ]
            for path in paths {
                let answer = try await browser.call(.get, path)
                let policy = answer.headers[HTTPField.Name("Content-Security-Policy")!] ?? ""
                #expect(policy.contains("default-src 'self'") && policy.contains("frame-ancestors 'none'"), "\(path)")
                #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "\(path)")
                #expect(answer.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(path)")
                #expect(answer.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer", "\(path)")
                if answer.headers[.contentType]?.hasPrefix("text/html") == true {
                    #expect(!answer.body.contains("<script>") && !answer.body.contains(" style=\""), "\(path): no inline script or style")
                }
            }
            let missing = try await browser.call(.get, "/console/nowhere")
            #expect(missing.status == .notFound && missing.headers[.contentType]?.hasPrefix("text/html") == true)
            let forbidden = try await browser.call(.post, "/console/keys", form: [("name", "x")])
            #expect(forbidden.status == .forbidden && forbidden.headers[HTTPField.Name("Content-Security-Policy")!] != nil)
        }
    }

    // Failed before: the figures were counted afresh, and the page still said "Device figures as counted at : …".
    @Test("the overview's first view counts the devices itself and gives the figures no age")
    func freshFiguresHaveNoAge() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            try await client.register(testToken(0x51), debug: true)
            var browser = ConsoleClient(client)
            // The server's first view of the overview always counts afresh (later ones may show a count kept from a
            // slow one, with its time): so this view is the test's own.
            try await browser.signIn(secret, followRedirect: false)
            let overview = try await browser.call(.get, "/console")
            #expect(overview.status == .ok && overview.body.contains("Devices by app"))
            #expect(!overview.body.contains("counted at"), "\(overview.body)")
        }
    }

    // Failed before: /favicon.ico answered 404, which every browser asks for and logs as an error.
    @Test("the console has an icon: linked from every page, and at /favicon.ico for the pages without the link")
    func favicon() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let page = try await browser.call(.get, "/console")
            #expect(page.body.contains(#"<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml">"#))
            for path in ["/console/assets/favicon.svg", "/favicon.ico"] {
                let icon = try await client.call(.get, path)
                #expect(icon.status == .ok, "\(path): \(icon.status)")
                #expect(icon.headers[.contentType] == "image/svg+xml" && icon.body.hasPrefix("<svg "), "\(path)")
            }
        }
    }

    @Test("every page renders on an empty store with its empty state, on each backend", arguments: Backend.available)
    func emptyPages(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            for path in Self.pages {
                let answer = try await browser.call(.get, path)
                #expect(answer.status == .ok, "\(path): \(answer.status)")
                #expect(answer.body.contains("aria-current=\"page\""), "\(path)")
            }
            let devices = try await browser.call(.get, "/console/devices")
            #expect(devices.body.contains("No devices yet") && devices.body.contains("/api/token"))
            #expect(devices.body.contains("&quot;debug&quot;: true"), "a real example body, escaped")
            #expect(try await browser.call(.get, "/console/sends").body.contains("No sends yet"))
        }
    }

    @Test("every file in Sources/HeraldServer/Console/Assets is one of the console's assets, under its name")
    func assetsEmbedded() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../Sources/HeraldServer/Console/Assets").standardized
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.count == ConsoleAssets.templates.count + ConsoleAssets.files.count)
        for name in names {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            let embedded =
                name.hasSuffix(".mustache")
                ? ConsoleAssets.templates[String(name.dropLast(".mustache".count))] : ConsoleAssets.files[name]
            #expect(embedded == text, "\(name) needs its line in ConsoleAssets.swift")
        }
    }

    /// Stored XSS attempts: a script element, and an element that runs script through an attribute.
    static let attack = "<script>alert(1)</script>"
    static let image = "<img src=x onerror=alert(2)>"

    @Test("a stored XSS attempt in every user-controlled field renders inert", arguments: Backend.available)
    func escaping(_ backend: Backend) async throws {
        let (attack, image) = (Self.attack, Self.image)
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            let sendKey = try await app.store.createAPIKey(name: image, scopes: [.send, .admin]).secret.value
            let token = testToken(0x5c)
            let user = "u\(attack)"
            try await client.register(
                token, debug: true,
                extra: #", "userId": "\#(user)", "tags": ["\#(image)"], "appVersion": "\#(attack)", "preferredLanguages": ["en"]"#)
            let sent = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"user": "\#(user)"}, "alert": {"title": "\#(attack)", "body": "\#(image)"}, "data": {"x": "</script><script>alert(3)</script>"}}"#,
                bearer: sendKey)
            #expect(sent.status == .ok, "\(sent)")
            let send = try #require(SendID(sent.json["id"]?.stringValue ?? ""))
            let rejected = try await app.store.createSend(NewSend(target: "tag \(image)", summary: attack, status: .completed))
            _ = try await app.store.recordOutcomes(
                [
                    DeliveryOutcome(
                        token: token, environment: .development,
                        result: .rejected(status: 400, reason: APNSReason(rawValue: attack), timestamp: nil), at: Date(),
                        action: .removed),
                    DeliveryOutcome(
                        token: testToken(0x5d), environment: .development, result: .failed(message: image), at: Date()),
                ], for: rejected.id, checkpoint: nil)

            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let userQuery = ConsoleClient.encode(user)
            let paths =
                Self.pages + [
                    "/console/devices?user=\(userQuery)", "/console/devices/\(token.hex)", "/console/sends/\(send)",
                    "/console/sends/\(rejected.id)", "/console/devices?q=\(ConsoleClient.encode(attack))",
                    "/console/devices?tag=\(ConsoleClient.encode(image))", "/console/emulator?q=\(token.hex.suffix(8))",
                ]
            var seen = Set<String>()
            for path in paths {
                let answer = try await browser.call(.get, path)
                #expect(answer.status == .ok, "\(path): \(answer.status)")
                for raw in [attack, image, "<script>alert(3)", "<img src"] where answer.body.contains(raw) {
                    Issue.record("\(path) contains \(raw) unescaped")
                }
                for escaped in ["&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;"]
                where answer.body.contains(escaped) {
                    seen.insert(escaped)
                }
            }
            #expect(seen.count == 2, "the values are shown, escaped: \(seen)")
            let device = try await browser.call(.get, "/console/devices/\(token.hex)")
            #expect(device.body.contains("u&lt;script&gt;") && device.body.contains("&lt;img src=x"))
            let overview = try await browser.call(.get, "/console")
            #expect(overview.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the reason in the chart, escaped")
        }
    }

    @Test("the overview, lists and a send's page show what was registered and sent", arguments: Backend.available)
    func pagesWithData(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await app.store.createAPIKey(name: "ops", scopes: [.admin, .send]).secret.value
            for n in 1...3 { try await client.register(testToken(0x40 + n), debug: true, extra: #", "userId": "ann", "tags": ["beta"]"#) }
            let sent = try await client.call(
                .post, "/api/send", body: #"{"target": {"tag": "beta"}, "alert": "Hello"}"#, bearer: secret)
            let id = try #require(sent.json["id"]?.stringValue)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let overview = try await browser.call(.get, "/console")
            #expect(overview.body.contains("Devices by app") && overview.body.contains("<svg"))
            #expect(overview.body.contains("role=\"img\""))
            #expect(overview.body.contains("id=\"deployment-checks\""), "herald doctor's checks have their section")
            let sends = try await browser.call(.get, "/console/sends")
            #expect(sends.body.contains("/console/sends/\(id)") && sends.body.contains("tag beta"))
            let page = try await browser.call(.get, "/console/sends/\(id)")
            #expect(page.body.contains("completed") && page.body.contains("accepted") && page.body.contains("apns-id"))
            let found = try await browser.call(.get, "/console/devices?q=\(testToken(0x41).hex.suffix(8))")
            #expect(found.body.contains("/console/devices/\(testToken(0x41).hex)"))
            let device = try await browser.call(.get, "/console/devices/\(testToken(0x41).hex)")
            #expect(device.body.contains("/console/sends/\(id)") && device.body.contains("ann"))
            let removed = try await browser.call(
                .post, "/console/devices/\(testToken(0x41).hex)/remove", form: [("_csrf", browser.csrf)])
            #expect(removed.status == .seeOther)
            #expect(try await app.store.device(testToken(0x41)) == nil)
            let keys = try await browser.call(.get, "/console/keys")
            let keyID = try #require(try await app.store.apiKeys().first?.id.uuidString.lowercased())
            #expect(keys.body.contains("/console/keys/\(keyID)/revoke"))
        }
    }
}

@Suite("Send dry run", .timeLimit(.minutes(2)))
struct SendDryRunTests {
    @Test("a dry run answers the target count, payloads and headers, and sends and records nothing", arguments: Backend.available)
    func dryRun(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await SendTests.key(app)
            try await client.register(testToken(0x71), debug: true, extra: #", "userId": "bo", "preferredLanguages": ["fr"]"#)
            try await client.register(testToken(0x72), debug: false, extra: #", "userId": "bo""#)
            let body = #"""
                {"target": {"user": "bo"}, "alert": {"title": "Hi"}, "localizations": {"fr": {"title": "Salut"}},
                 "collapseId": "c1", "priority": 5, "badge": 2}
                """#
            let answer = try await client.call(.post, "/api/send?dryRun=true", body: body, bearer: secret)
            #expect(answer.status == .ok, "\(answer)")
            #expect(answer.json["dryRun"] == true && answer.json["targetCount"] == 2 && answer.json["background"] == false)
            let notifications = try #require(answer.json["notifications"]?.arrayValue)
            #expect(notifications.count == 2)
            let first = try #require(notifications.first)
            #expect(first["headers"]?["apns-push-type"] == "alert" && first["headers"]?["apns-collapse-id"] == "c1")
            #expect(first["headers"]?["apns-priority"] == "5" && first["headers"]?["apns-topic"]?.stringValue == ServerHarness.topic)
            #expect(first["payload"]?["aps"]?["alert"]?["title"] == "Hi" && first["payload"]?["aps"]?["badge"] == 2)
            #expect(first["payloadLimit"] == 4096 && (first["payloadBytes"]?.intValue ?? 0) > 20)
            #expect(notifications[1]["language"] == "fr")
            #expect(answer.body.hasPrefix(#"{"background":false,"dryRun":true,"notifications":"#), "keys in name order")
            #expect(try await app.store.recentSends(after: nil, limit: 10).sends.isEmpty, "nothing recorded")
            let inbox = (try? app.emulator?.inbox(for: testToken(0x71))) ?? nil
            #expect(inbox?.isEmpty ?? true, "nothing sent")
        }
    }

    @Test("a dry run refuses exactly what the send refuses", arguments: [
        (#"{"target": {"user": "bo"}, "alert": "x", "collapseId": "\#(String(repeating: "c", count: 65))"}"#, "BadCollapseId"),
        (#"{"target": {"user": "bo"}, "alert": "x", "priority": 7}"#, "BadPriority"),
        (#"{"alert": "x"}"#, "missingTarget"),
        (#"{"target": {"token": "\#(String(repeating: "ab", count: 32))"}, "alert": "x"}"#, "unknownToken"),
        (#"{"target": {"user": "bo"}, "badge": -1}"#, "invalidField"),
    ])
    func refusals(_ body: String, _ reason: String) async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await SendTests.key(app)
            let dry = try await client.call(.post, "/api/send?dryRun=true", body: body, bearer: secret)
            let real = try await client.call(.post, "/api/send", body: body, bearer: secret)
            #expect(dry.reason == reason && dry.status == real.status && dry.body == real.body, "\(dry) vs \(real)")
            #expect(try await client.call(.post, "/api/send?dryRun=maybe", body: body, bearer: secret).reason == "invalidField")
        }
    }
}
