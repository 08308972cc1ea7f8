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
        BrowserHarness.needsBrowser, .timeLimit(.minutes(5)), arguments: scenarios)
    func scenario(_ scenario: Scenario) async throws {
        try await BrowserHarness.requireBrowser()
        // Sends that name no category ignore them: only the preferences scenario sees them.
        try await BrowserHarness.withServe(
            "browser", environment: { _ in ["HERALD_PREFERENCE_CATEGORIES": "orders:mandatory,social,marketing:off"] }
        ) { server in
            let link = try await BrowserHarness.signInLink(server)
            let screenshots = BrowserHarness.screenshots
            for name in scenario.screenshots {
                try? FileManager.default.removeItem(at: screenshots.appendingPathComponent(name + ".png"))
            }
            let script = BrowserHarness.script("browser_flows.py")
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

    @Test("every scenario of browser_flows.py is a test case here", BrowserHarness.needsBrowser)
    func everyScenarioRuns() async throws {
        let script = BrowserHarness.script("browser_flows.py")
        let listed = try await ProcessRunner.run("python3", [script.path, "--list"])
        #expect(listed.status == 0, "\(listed.standardError)")
        #expect(listed.standardOutput.split(separator: "\n").map(String.init) == Self.scenarios.map(\.name))
    }
}
