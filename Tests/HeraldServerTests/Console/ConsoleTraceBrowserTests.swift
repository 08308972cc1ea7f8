import Foundation
import HeraldTesting
import Testing

/// The delivery trace page and the Live Activity budget column in a real browser: `herald serve` as its own process
/// (budget 2), and Tests/…/trace_flows.py driving chromium headless through Playwright. Screenshots go to
/// `.build/console-screenshots/`. Skipped without chromium or Playwright, unless `CI` is set.
@Suite("Console in a real browser: delivery trace and Live Activity budget")
struct ConsoleTraceBrowserTests {
    @Test(
        "a send's device and a device's delivery link to the trace (verdict, timeline, apns-unique-id); the Live Activities page shows an activity's budget and its downgrades",
        .enabled("chromium or Playwright is missing: apt-get install chromium && pip install playwright (CI runs this test)") {
            if ConsoleBrowserTests.isCI { return true }
            return await ConsoleBrowserTests.browserAvailable()
        },
        .timeLimit(.minutes(5)))
    func traceAndBudget() async throws {
        try #require(
            await ConsoleBrowserTests.browserAvailable(),
            "CI is set but \(ConsoleBrowserTests.chromium) or Python's playwright is missing: .ci/run installs them")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-trace-browser-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await ServeProcess.start(
            in: directory,
            environment: [
                "HERALD_RATE_LIMIT": "0", "HERALD_EMULATOR_ADMIN_PORT": "off", "HERALD_LOG_LEVEL": "notice",
                "HERALD_EMULATOR_CA_FILE": directory.appendingPathComponent("ca.pem").path,
                "HERALD_LIVE_ACTIVITY_BUDGET": "2",
            ])
        defer { server.process.signal(SIGKILL) }
        let log = try #require(
            await server.process.standardOutput.wait { $0.contains("/console/sign-in/") },
            "herald serve ended without printing its sign-in link: \(server.process.standardOutput.text)")
        let link = try #require(
            log.split(separator: " ").first { $0.contains("/console/sign-in/") }.map {
                "/console/sign-in/" + $0.components(separatedBy: "/console/sign-in/")[1]
            })
        let screenshots = ConsoleBrowserTests.packageRoot.appendingPathComponent(".build/console-screenshots")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "trace_flows.py")
        let result = try await ProcessRunner.run(
            "python3", [script.path, "http://127.0.0.1:\(server.port)", link, screenshots.path])
        #expect(
            result.status == 0,
            "trace flows failed:\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
        for name in ["trace", "activities-budget"] {
            #expect(
                FileManager.default.fileExists(atPath: screenshots.appendingPathComponent(name + ".png").path),
                "screenshot \(name)")
        }
    }
}
