import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// herald-web.js and herald-sw.js in chromium (docs/web-push.md, "From a page"): a page of the app's website registers
/// a subscription with Herald across origins, a send reaches it through the emulator's push service, the push is
/// delivered to the page's service worker, which shows it and reports it received.
@Suite("Web Push in the browser", .serialized)
struct WebPushBrowserTests {
    static func freePort() async throws -> Int {
        let found = try await ProcessRunner.run(
            "python3", ["-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
        return try #require(Int(found.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test(
        "a page registers a subscription through herald-web.js (CORS from its origin only), a send reaches its service worker, which shows it and reports it received; the console's compose page previews it for the browser",
        BrowserHarness.needsBrowser, .timeLimit(.minutes(3)))
    func pageToServiceWorker() async throws {
        try await BrowserHarness.requireBrowser()
        let sitePort = try await Self.freePort()
        let adminPort = try await Self.freePort()
        let vapid = VAPIDKey.generate()
        let secret = "web-push-browser-" + String(repeating: "k", count: 24)
        try await BrowserHarness.withServe(
            "web-push",
            environment: { _ in
                [
                    "HERALD_VAPID_PRIVATE_KEY": vapid.privateKeyText, "HERALD_VAPID_SUBJECT": "mailto:push@example.com",
                    "HERALD_WEB_ORIGIN": "http://127.0.0.1:\(sitePort)", "HERALD_EMULATOR_ADMIN_PORT": "\(adminPort)",
                    "HERALD_API_KEYS": "browser:send+read:\(secret)",
                ]
            }
        ) { server in
            let link = try await BrowserHarness.signInLink(server)
            let run = try await ProcessRunner.run(
                "python3",
                [
                    BrowserHarness.script("web_push_flow.py").path, "http://127.0.0.1:\(server.port)",
                    "http://127.0.0.1:\(adminPort)", "\(sitePort)", vapid.publicKeyText, secret, link,
                ])
            #expect(run.status == 0, "web_push_flow.py: \(run.standardOutput)\n\(run.standardError)")
        }
    }
}
