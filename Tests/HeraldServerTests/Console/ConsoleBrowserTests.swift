import Foundation
import HeraldTesting
import Testing

/// The console's flows in a real browser: `herald serve` as its own process, and Tests/…/browser_flows.py driving
/// Debian's chromium headless through Playwright. Screenshots of each page go to `.build/console-screenshots/`.
///
/// Needs `chromium` (apt-get install chromium) and Playwright (pip install playwright). Without them the test is
/// skipped, unless `CI` is set: CI must run it, so there a missing browser fails.
@Suite("Console in a real browser")
struct ConsoleBrowserTests {
    static let chromium = ProcessInfo.processInfo.environment["HERALD_CHROMIUM"] ?? "/usr/bin/chromium"
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false

    static func browserAvailable() async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: chromium) else { return false }
        return (try? await ProcessRunner.run("python3", ["-c", "import playwright.sync_api"]).status) == 0
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../..").standardized

    @Test(
        "sign in with the one-time link, compose with a mistake, send, watch a 5,000-device send reach 100 %, schedule a send and cancel it, find a device, create and revoke a key, register a webhook endpoint and see its test event delivered, end a Live Activity, create and delete a channel, sign out",
        .enabled("chromium or Playwright is missing: apt-get install chromium && pip install playwright (CI runs this test)") {
            if isCI { return true }
            return await browserAvailable()
        },
        .timeLimit(.minutes(10)))
    func flows() async throws {
        try #require(
            await Self.browserAvailable(),
            "CI is set but \(Self.chromium) or Python's playwright is missing: .ci/run installs them (apt-get install chromium; pip install playwright)"
        )
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-browser-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await ServeProcess.start(
            in: directory,
            environment: [
                "HERALD_RATE_LIMIT": "0", "HERALD_EMULATOR_ADMIN_PORT": "off", "HERALD_LOG_LEVEL": "notice",
                "HERALD_EMULATOR_CA_FILE": directory.appendingPathComponent("ca.pem").path,
            ])
        defer { server.process.signal(SIGKILL) }
        let log = try #require(
            await server.process.standardOutput.wait { $0.contains("/console/sign-in/") },
            "herald serve ended without printing its sign-in link: \(server.process.standardOutput.text)")
        let link = try #require(
            log.split(separator: " ").first { $0.contains("/console/sign-in/") }.map {
                "/console/sign-in/" + $0.components(separatedBy: "/console/sign-in/")[1]
            })
        let screenshots = Self.packageRoot.appendingPathComponent(".build/console-screenshots")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "browser_flows.py")
        let result = try await ProcessRunner.run(
            "python3", [script.path, "http://127.0.0.1:\(server.port)", link, screenshots.path])
        #expect(
            result.status == 0,
            "browser flows failed:\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
        for name in [
            "overview", "compose", "compose-error", "compose-schedule", "send", "send-progress", "send-scheduled", "sends",
            "device", "keys", "webhooks", "activities", "activity-ended", "channels", "sign-in",
        ] {
            #expect(
                FileManager.default.fileExists(atPath: screenshots.appendingPathComponent(name + ".png").path),
                "screenshot \(name)")
        }
    }
}
