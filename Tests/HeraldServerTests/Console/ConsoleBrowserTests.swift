import Foundation
import HeraldTesting
import Testing

/// The console's flows in a real browser: `herald serve` as its own process, and Tests/…/browser_flows.py driving
/// Debian's chromium headless through Playwright. One test case per scenario, each with a server of its own, so that
/// one failing hides no other. Screenshots of each page go to `.build/console-screenshots/` (and
/// `<scenario>-failed.png` when one fails).
///
/// Needs `chromium` (apt-get install chromium) and Playwright (pip install playwright). Without them the tests are
/// skipped, unless `CI` is set: CI must run them, so there a missing browser fails.
///
/// Serialized: each scenario runs a browser and a server, and ten of them at once on two cores starve each other.
@Suite("Console in a real browser", .serialized)
struct ConsoleBrowserTests {
    static let chromium = ProcessInfo.processInfo.environment["HERALD_CHROMIUM"] ?? "/usr/bin/chromium"
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false

    static func browserAvailable() async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: chromium) else { return false }
        return (try? await ProcessRunner.run("python3", ["-c", "import playwright.sync_api"]).status) == 0
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../..").standardized

    /// A scenario of browser_flows.py and the screenshots it keeps.
    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let screenshots: [String]

        var testDescription: String { name }
    }

    static let scenarios = [
        Scenario(name: "sign-in", screenshots: ["overview-empty"]),
        Scenario(name: "compose", screenshots: ["compose-empty", "compose-error", "compose"]),
        Scenario(name: "background-send", screenshots: ["send-progress", "send", "sends"]),
        Scenario(name: "schedule", screenshots: ["compose-schedule-error", "compose-schedule", "send-scheduled"]),
        Scenario(name: "device", screenshots: ["device"]),
        Scenario(
            name: "preferences", screenshots: ["device-preferences", "user-preferences", "device-preferences-viewer"]),
        Scenario(
            name: "emulator-and-overview",
            screenshots: ["emulator", "overview", "overview-apns", "overview-phone", "compose-schedule-phone"]),
        Scenario(name: "keys", screenshots: ["keys-created", "keys"]),
        Scenario(name: "live-activities", screenshots: ["activities", "activity-ended"]),
        Scenario(name: "channels", screenshots: ["channels"]),
        Scenario(name: "webhooks", screenshots: ["webhooks"]),
        Scenario(name: "sign-out", screenshots: ["sign-in"]),
    ]

    @Test(
        "a console scenario in chromium: sign-in, compose (an empty form prompts, a mistake shows), a 5,000-device background send, scheduling, a device, a person's preferences, the emulator and overview, keys, Live Activities, channels, webhooks, sign-out",
        .enabled("chromium or Playwright is missing: apt-get install chromium && pip install playwright (CI runs these tests)") {
            if isCI { return true }
            return await browserAvailable()
        },
        .timeLimit(.minutes(5)),
        arguments: scenarios)
    func scenario(_ scenario: Scenario) async throws {
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
                // Sends that name no category ignore them: only the preferences scenario sees them.
                "HERALD_PREFERENCE_CATEGORIES": "orders:mandatory,social,marketing:off",
            ])
        try await withCleanup({ _ = await server.terminate() }) {
            let log = try #require(
                await server.process.standardOutput.wait { $0.contains("/console/sign-in/") },
                "herald serve ended without printing its sign-in link: \(server.process.standardOutput.text)")
            let link = try #require(
                log.split(separator: " ").first { $0.contains("/console/sign-in/") }.map {
                    "/console/sign-in/" + $0.components(separatedBy: "/console/sign-in/")[1]
                })
            let screenshots = Self.packageRoot.appendingPathComponent(".build/console-screenshots")
            for name in scenario.screenshots {
                try? FileManager.default.removeItem(at: screenshots.appendingPathComponent(name + ".png"))
            }
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "browser_flows.py")
            let result = try await ProcessRunner.run(
                "python3", [script.path, scenario.name, "http://127.0.0.1:\(server.port)", link, screenshots.path])
            #expect(
                result.status == 0,
                "browser scenario \(scenario.name) failed (screenshot: \(scenario.name)-failed.png):\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
            for name in scenario.screenshots {
                #expect(
                    FileManager.default.fileExists(atPath: screenshots.appendingPathComponent(name + ".png").path),
                    "screenshot \(name)")
            }
        }
    }

    @Test(
        "every scenario of browser_flows.py is a test case here",
        .enabled("Playwright is missing: pip install playwright (CI runs this test)") {
            if isCI { return true }
            return await browserAvailable()
        })
    func everyScenarioRuns() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("browser_flows.py")
        let listed = try await ProcessRunner.run("python3", [script.path, "--list"])
        #expect(listed.status == 0, "\(listed.standardError)")
        #expect(listed.standardOutput.split(separator: "\n").map(String.init) == Self.scenarios.map(\.name))
    }
}
