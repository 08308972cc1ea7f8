import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// The console's routes as one group: its middlewares decide who reaches a page (``ConsoleSessionMiddleware``), and
/// the API authenticates a console session's calls itself (``APIKeyAuthenticator``).
@Suite("Console route group and session middleware", .timeLimit(.minutes(2)))
struct ConsoleRouteGroupTests {
    /// Every console page but the sign-in pages and the assets, with the least role its group admits.
    static let pages: [(method: HTTPRequest.Method, path: String, role: ConsoleRole)] = [
        (.get, "/console", .viewer), (.get, "/console/sends", .viewer), (.get, "/console/sends/\(SendID())", .viewer),
        (.get, "/console/sends/\(SendID())/devices/\(String(repeating: "ab", count: 32))", .viewer),
        (.get, "/console/devices", .viewer), (.get, "/console/devices/\(String(repeating: "ab", count: 32))", .viewer),
        (.get, "/console/activities", .viewer), (.get, "/console/channels", .viewer),
        (.get, "/console/emulator", .viewer), (.post, "/console/sign-out", .viewer),
        (.get, "/console/compose", .operator), (.post, "/console/sends/\(SendID())/cancel", .operator),
        (.post, "/console/activities/end", .operator), (.post, "/console/channels", .operator),
        (.post, "/console/channels/delete", .operator), (.post, "/console/preferences", .operator),
        (.post, "/console/devices/\(String(repeating: "ab", count: 32))/remove", .admin), (.get, "/console/keys", .admin),
        (.post, "/console/keys", .admin), (.post, "/console/keys/\(UUID())/revoke", .admin),
        (.get, "/console/audit", .admin), (.get, "/console/webhooks", .admin), (.post, "/console/webhooks", .admin),
        (.post, "/console/webhooks/\(UUID())/pause", .admin),
    ]

    @Test("every console page sends a request without a session to the sign-in page, with the console's headers")
    func signedOut() async throws {
        try await ServerHarness.withServer { client, _ in
            for page in Self.pages {
                var browser = ConsoleClient(client)
                let answer = try await browser.call(page.method, page.path, form: page.method == .post ? [] : nil)
                #expect(answer.status == .seeOther && answer.headers[.location] == "/console/sign-in", "\(page.path)")
                #expect(answer.headers[HTTPField.Name("Content-Security-Policy")!] != nil, "\(page.path)")
            }
        }
    }

    @Test("a page above the session's role is 403 consoleRoleTooLow, as an HTML page, before its form is read")
    func roleTooLow() async throws {
        try await ServerHarness.withServer { client, app in
            let viewerKey = try await app.store.createAPIKey(name: "viewer", scopes: [.read]).secret.value
            let operatorKey = try await app.store.createAPIKey(name: "operator", scopes: [.send]).secret.value
            for (secret, role) in [(viewerKey, ConsoleRole.viewer), (operatorKey, .operator)] {
                var browser = ConsoleClient(client)
                try await browser.signIn(secret)
                for page in Self.pages where page.role > role {
                    // No CSRF token: a form the role may not post is refused for the role, not for the token.
                    let answer = try await browser.call(page.method, page.path, form: page.method == .post ? [] : nil)
                    #expect(answer.status == .forbidden, "\(role) \(page.path)")
                    #expect(answer.headers[.contentType]?.hasPrefix("text/html") == true, "\(page.path)")
                    #expect(answer.body.contains("You are signed in as a \(role.rawValue)"), "\(page.path)")
                }
            }
            #expect(try await app.store.apiKeys().count == 2, "nothing was created")
        }
    }

    @Test("an unknown console path is the console's 404 page, with the navigation when signed in; an unknown API path stays JSON")
    func notFound() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await app.store.createAPIKey(name: "ops", scopes: [.admin]).secret.value
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let page = try await browser.call(.get, "/console/nowhere/at/all")
            #expect(page.status == .notFound && page.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(page.body.contains("There is no such page in the console."))
            #expect(page.body.contains(#"<nav aria-label="Console">"#), "the signed-in navigation")
            #expect(page.headers[HTTPField.Name("Content-Security-Policy")!] != nil)

            let api = try await browser.call(.get, "/api/nowhere")
            #expect(api.status == .notFound && api.headers[.contentType]?.hasPrefix("application/json") == true)
            #expect(api.headers[HTTPField.Name("Content-Security-Policy")!] == nil, "the console's headers stay off the API")
            let sends = try await browser.call(.get, "/api/sends")
            #expect(sends.status == .ok && sends.headers[HTTPField.Name("Content-Security-Policy")!] == nil)
        }
    }

    @Test("a console session's API call acts with its role: a viewer reads, and may not send")
    func apiWithSessionRole() async throws {
        try await ServerHarness.withServer { client, app in
            let viewerKey = try await app.store.createAPIKey(name: "viewer", scopes: [.read]).secret.value
            var browser = ConsoleClient(client)
            try await browser.signIn(viewerKey)
            #expect(try await browser.call(.get, "/api/sends").status == .ok)
            let send = try await browser.send(#"{"target": {"user": "nobody"}, "alert": "hi"}"#, dryRun: true)
            #expect(send.status == .forbidden && send.reason == "insufficientScope", "\(send)")
        }
    }

    /// A view with a missing value, a `nil` one and the parts of a composed view.
    struct Probe: ComposedView {
        struct Part { let shared: String; let partOnly: Int }
        let own: String
        let shared: String
        let absent: String?
        let part: Part
        var parts: [Any] { [part] }
    }

    @Test("a view's nil optional is missing, as a dictionary's absent key is; a composed view's own values come first")
    func viewValues() {
        let probe = Probe(own: "mine", shared: "own", absent: nil, part: .init(shared: "part", partOnly: 7))
        #expect(ConsoleViewValues.child(named: "own", of: probe) as? String == "mine")
        #expect(ConsoleViewValues.child(named: "shared", of: probe) as? String == "own")
        #expect(ConsoleViewValues.child(named: "partOnly", of: probe) as? Int == 7)
        #expect(ConsoleViewValues.child(named: "absent", of: probe) == nil)
        #expect(ConsoleViewValues.child(named: "nothing", of: probe) == nil)
        #expect(ConsoleViewValues.child(named: "parts", of: probe) == nil, "a computed property is no value")
    }
}
