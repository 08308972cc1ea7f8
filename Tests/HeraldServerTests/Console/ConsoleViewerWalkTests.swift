import Foundation
import HeraldTesting
import Testing

/// A viewer limited to one app walks the console in a real browser (Tests/…/viewer_walk.py, headless chromium through
/// Playwright) and finds no trace of the other app on any page (issue 29, item 5; docs/security.md, "The console").
///
/// Skipped without chromium and Playwright unless `CI` is set (``BrowserHarness/needsBrowser``).
@Suite("Console: a one-app viewer in a real browser")
struct ConsoleViewerWalkTests {
    @Test(
        "a read-only key for com.alpha.app follows every link the console offers and opens beta's links: no page shows com.beta.app's devices, sends or channels",
        BrowserHarness.needsBrowser, .timeLimit(.minutes(5)))
    func viewerWalk() async throws {
        try await BrowserHarness.requireBrowser()
        let admin = "walk-admin-" + UUID().uuidString.lowercased()
        let environment = { (directory: URL) throws -> [String: String] in
            let configuration = directory.appendingPathComponent("herald.json")
            try Data(#"{"apps": [{"topic": "com.alpha.app"}, {"topic": "com.beta.app"}]}"#.utf8).write(to: configuration)
            return ["HERALD_CONFIG": configuration.path, "HERALD_API_KEYS": "walk:send+admin:\(admin)"]
        }
        try await BrowserHarness.withServe("viewer", environment: environment) { server in
            let result = try await ProcessRunner.run(
                "python3",
                [
                    BrowserHarness.script("viewer_walk.py").path, "http://127.0.0.1:\(server.port)", admin,
                    BrowserHarness.screenshots.path,
                ])
            #expect(
                result.status == 0, "the viewer's walk failed:\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
            #expect(result.standardOutput.contains("without a trace of com.beta.app"), "\(result.standardOutput)")
        }
    }
}
