import Foundation
import HeraldTesting
import Testing

/// A viewer limited to one app walks the console in a real browser (Tests/…/viewer_walk.py, headless chromium through
/// Playwright) and finds no trace of the other app on any page (issue 29, item 5; docs/security.md, "The console").
///
/// Skipped without chromium and Playwright unless `CI` is set, like ``ConsoleBrowserTests``.
@Suite("Console: a one-app viewer in a real browser")
struct ConsoleViewerWalkTests {
    @Test(
        "a read-only key for com.alpha.app follows every link the console offers and opens beta's links: no page shows com.beta.app's devices, sends or channels",
        .enabled("chromium or Playwright is missing: apt-get install chromium && pip install playwright (CI runs this test)") {
            if ConsoleBrowserTests.isCI { return true }
            return await ConsoleBrowserTests.browserAvailable()
        },
        .timeLimit(.minutes(5)))
    func viewerWalk() async throws {
        try #require(
            await ConsoleBrowserTests.browserAvailable(),
            "CI is set but chromium or Python's playwright is missing: .ci/run installs them")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-viewer-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = directory.appendingPathComponent("herald.json")
        try Data(#"{"apps": [{"topic": "com.alpha.app"}, {"topic": "com.beta.app"}]}"#.utf8).write(to: configuration)
        let admin = "walk-admin-" + UUID().uuidString.lowercased()
        let server = try await ServeProcess.start(
            in: directory,
            environment: [
                "HERALD_CONFIG": configuration.path, "HERALD_API_KEYS": "walk:send+admin:\(admin)",
                "HERALD_RATE_LIMIT": "0", "HERALD_EMULATOR_ADMIN_PORT": "off", "HERALD_LOG_LEVEL": "notice",
                "HERALD_EMULATOR_CA_FILE": directory.appendingPathComponent("ca.pem").path,
            ])
        defer { server.process.signal(SIGKILL) }
        let screenshots = ConsoleBrowserTests.packageRoot.appendingPathComponent(".build/console-screenshots")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("viewer_walk.py")
        let result = try await ProcessRunner.run(
            "python3", [script.path, "http://127.0.0.1:\(server.port)", admin, screenshots.path])
        #expect(result.status == 0, "the viewer's walk failed:\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
        #expect(result.standardOutput.contains("without a trace of com.beta.app"), "\(result.standardOutput)")
    }
}
