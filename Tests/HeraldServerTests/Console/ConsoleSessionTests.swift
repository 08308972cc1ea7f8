import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

@Suite("Console sign-in and sessions", .timeLimit(.minutes(2)))
struct ConsoleSessionTests {
    static func adminKey(_ app: HeraldApplication) async throws -> String {
        try await app.store.createAPIKey(name: "ops", scopes: [.admin]).secret.value
    }

    @Test("an admin key signs in: the session cookie is HttpOnly, SameSite=Strict, Secure only over TLS", arguments: Backend.available)
    func signIn(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await Self.adminKey(app)
            var browser = ConsoleClient(client)
            let before = try await browser.call(.get, "/console")
            #expect(before.status == .seeOther && before.headers[.location] == "/console/sign-in")
            let answer = try await browser.signIn(secret)
            #expect(answer.status == .seeOther && answer.headers[.location] == "/console", "\(answer)")
            let cookie = try #require(ConsoleClient.setCookies(answer).first { $0.name == "herald_session" })
            #expect(cookie.value.count >= 43)
            #expect(cookie.attributes.contains("HttpOnly") && cookie.attributes.contains("SameSite=Strict"))
            #expect(cookie.attributes.contains("Path=/") && !cookie.attributes.contains("Secure"))
            let overview = try await browser.call(.get, "/console")
            #expect(overview.status == .ok && overview.body.contains("<h1>Overview</h1>") && !browser.csrf.isEmpty)
            #expect(!overview.body.contains(secret), "the key never reaches a page")

            var proxied = ConsoleClient(client)
            let overTLS = try await proxied.signIn(secret, headers: [HTTPField.Name("X-Forwarded-Proto")!: "https"])
            #expect(ConsoleClient.setCookies(overTLS).first { $0.name == "herald_session" }?.attributes.contains("Secure") == true)
        }
    }

    @Test("a key without a console role's scope (admin, send, read), an unknown key and a revoked key do not sign in")
    func refused() async throws {
        try await ServerHarness.withServer { client, app in
            let send = try await app.store.createAPIKey(name: "backend", scopes: [.register]).secret.value
            let revoked = try await app.store.createAPIKey(name: "old", scopes: [.admin])
            _ = try await app.store.revokeAPIKey(revoked.key.id)
            for secret in [send, revoked.secret.value, "hrld_00000000_" + String(repeating: "a", count: 43)] {
                var browser = ConsoleClient(client)
                let answer = try await browser.signIn(secret)
                #expect(answer.status == .unauthorized && answer.body.contains("none of the admin, send or read scopes"), "\(answer.status)")
                #expect(browser.cookies["herald_session"] == nil)
            }
        }
    }

    @Test("signing in replaces the session the browser carried (no fixation), and signing out ends it for pages and the API")
    func rotationAndSignOut() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await Self.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let first = try #require(browser.cookies["herald_session"])
            try await browser.signIn(secret)
            let second = try #require(browser.cookies["herald_session"])
            #expect(first != second)
            var attacker = ConsoleClient(client)
            attacker.cookies["herald_session"] = first
            #expect(try await attacker.call(.get, "/console").status == .seeOther, "the replaced id no longer works")

            var stolen = ConsoleClient(client)
            stolen.cookies["herald_session"] = second
            #expect(try await stolen.call(.get, "/api/sends/\(SendID())").status == .notFound, "the session reads the API")
            let out = try await browser.call(.post, "/console/sign-out", form: [("_csrf", browser.csrf)])
            #expect(out.status == .seeOther && browser.cookies["herald_session"] == nil)
            #expect(try await stolen.call(.get, "/console").status == .seeOther, "the old cookie is refused")
            let api = try await stolen.call(.get, "/api/sends/\(SendID())")
            #expect(api.status == .unauthorized && api.reason == "missingAPIKey")
        }
    }

    @Test("state-changing forms and API calls without the session's CSRF token are refused")
    func csrf() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await Self.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            for form in [[("name", "x"), ("scope", "send")], [("_csrf", "forged"), ("name", "x"), ("scope", "send")]] {
                let answer = try await browser.call(.post, "/console/keys", form: form)
                #expect(answer.status == .forbidden && answer.body.contains("reload it"), "\(answer.status)")
            }
            #expect(try await app.store.apiKeys().count == 1, "no key was created")
            #expect(try await browser.call(.post, "/console/sign-out", form: []).status == .forbidden)
            let body = #"{"target": {"user": "nobody"}, "alert": "hi"}"#
            let api = try await browser.call(.post, "/api/send?dryRun=true", json: body)
            #expect(api.status == .forbidden && api.reason == "csrfTokenMissing")
            let withToken = try await browser.call(
                .post, "/api/send?dryRun=true", json: body, headers: [ConsoleAuthority.csrfHeader: browser.csrf])
            #expect(withToken.status == .ok, "\(withToken)")
            let created = try await browser.call(
                .post, "/console/keys", form: [("_csrf", browser.csrf), ("name", "ci"), ("scope", "send")])
            #expect(created.status == .created && created.body.contains("hrld_"))

            var stranger = ConsoleClient(client)
            let signInWithoutToken = try await stranger.call(.post, "/console/sign-in", form: [("key", secret)])
            #expect(signInWithoutToken.status == .forbidden && stranger.cookies["herald_session"] == nil)
        }
    }

    @Test("sign-in attempts are rate-limited per client")
    func rateLimit() async throws {
        try await ServerHarness.withServer(configure: { $0.console.signInAttemptsPerMinute = 3 }) { client, _ in
            var statuses: [Int] = []
            for _ in 1...4 {
                var browser = ConsoleClient(client)
                statuses.append(try await browser.signIn("hrld_00000000_" + String(repeating: "b", count: 43)).status.code)
            }
            #expect(statuses == [401, 401, 401, 429])
        }
    }

    @Test("a session unused for the idle timeout ends; using it moves the timeout")
    func idleExpiry() async throws {
        let clock = ManualWallClock()
        try await ServerHarness.withServer(clock: clock) { client, app in
            let secret = try await Self.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            clock.advance(by: .seconds(1500))
            #expect(try await browser.call(.get, "/console/keys").status == .ok)
            clock.advance(by: .seconds(1500))
            #expect(try await browser.call(.get, "/console/keys").status == .ok, "25 minutes after the last use")
            clock.advance(by: .seconds(1801))
            #expect(try await browser.call(.get, "/console/keys").status == .seeOther)
            #expect(try await app.store.deleteConsoleSessions(lastSeenBefore: clock.now()) == 0, "it was deleted")
        }
    }

    @Test("revoking the key a session signed in with ends the session")
    func revokedKey() async throws {
        try await ServerHarness.withServer { client, app in
            let created = try await app.store.createAPIKey(name: "ops", scopes: [.admin])
            var browser = ConsoleClient(client)
            try await browser.signIn(created.secret.value)
            #expect(try await browser.call(.get, "/console").status == .ok)
            _ = try await app.store.revokeAPIKey(created.key.id)
            #expect(try await browser.call(.get, "/console").status == .seeOther)
        }
    }

    @Test("a key revoked in the console is refused at once, though the server had just verified it")
    func revokedInConsole() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await Self.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let backend = try await app.store.createAPIKey(name: "backend", scopes: [.send])
            let send = #"{"target": {"user": "nobody"}, "alert": "x"}"#
            #expect(try await client.call(.post, "/api/send", body: send, bearer: backend.secret.value).status == .ok)
            let revoked = try await browser.call(
                .post, "/console/keys/\(backend.key.id)/revoke", form: [("_csrf", browser.csrf)])
            #expect(revoked.status == .seeOther)
            let refused = try await client.call(.post, "/api/send", body: send, bearer: backend.secret.value)
            #expect(refused.status == .unauthorized && refused.reason == "invalidAPIKey")
        }
    }

    @Test("a server without an admin key makes a one-time sign-in link that works once", arguments: Backend.available)
    func oneTimeLink(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let path = try #require(app.consoleSignInLinkPath)
            var browser = ConsoleClient(client)
            let answer = try await browser.call(.get, path)
            #expect(answer.status == .seeOther && browser.cookies["herald_session"] != nil)
            #expect(try await browser.call(.get, "/console/keys").status == .ok)
            var second = ConsoleClient(client)
            let again = try await second.call(.get, path)
            #expect(again.status == .unauthorized && again.body.contains("used already") && second.cookies["herald_session"] == nil)
            #expect(try await second.call(.get, "/console/sign-in/not-a-link").status == .unauthorized)
        }
        try await ServerHarness.withServer(
            backend, configure: { $0.apiKeys = [.init(name: "ops", scopes: [.admin], secret: String(repeating: "k", count: 40))] }
        ) { _, app in
            #expect(app.consoleSignInLinkPath == nil, "an admin key exists: no link")
        }
    }

    @Test("the one-time link is in the first log lines of herald serve")
    func linkInLog() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-console-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await ServeProcess.start(
            in: directory, environment: ["HERALD_EMULATOR_ADMIN_PORT": "off", "HERALD_EMULATOR_CA_FILE": directory.path + "/ca.pem"])
        let printed = await serve.process.standardOutput.wait { $0.contains("/console/sign-in/") } ?? ""
        _ = await serve.terminate()
        let lines = printed.split(separator: "\n")
        let index = try #require(lines.firstIndex { $0.contains("/console/sign-in/") })
        let listening = try #require(lines.firstIndex { $0.contains("Herald is listening on") })
        // The services that start beside the server (retention's first run, the deployment checks) log as they go, so
        // a count of lines depends on the machine's speed: the link follows the listening line, with at most one of
        // theirs in between (it was the 7th line once, after retention's report).
        #expect(index < 8 && index > listening && index <= listening + 2, "\(lines.prefix(9))")
        #expect(lines[index].contains("http://127.0.0.1:\(serve.port)/console/sign-in/"))
    }
}
