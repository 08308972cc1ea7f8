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
    static let scenarios: [BrowserHarness.Scenario] = [
        .init(name: "sign-in", screenshots: ["overview-empty"]),
        .init(name: "compose", screenshots: ["compose-empty", "compose-error", "compose"]),
        .init(name: "background-send", screenshots: ["send-progress", "send", "sends"]),
        .init(name: "schedule", screenshots: ["compose-schedule-error", "compose-schedule", "send-scheduled"]),
        .init(name: "device", screenshots: ["device"]),
        .init(
            name: "preferences", screenshots: ["device-preferences", "user-preferences", "device-preferences-viewer"]),
        .init(
            name: "emulator-and-overview",
            screenshots: ["emulator", "overview", "overview-apns", "overview-phone", "compose-schedule-phone"]),
        .init(name: "keys", screenshots: ["keys-created", "keys"]),
        .init(name: "live-activities", screenshots: ["activities", "activity-ended"]),
        .init(name: "channels", screenshots: ["channels"]),
        .init(name: "webhooks", screenshots: ["webhooks"]),
        .init(name: "sign-out", screenshots: ["sign-in"]),
    ]

    @Test(
        "a console scenario in chromium: sign-in, compose (an empty form prompts, a mistake shows), a 5,000-device background send, scheduling, a device, a person's preferences, the emulator and overview, keys, Live Activities, channels, webhooks, sign-out",
        BrowserHarness.needsBrowser, .timeLimit(.minutes(5)), arguments: scenarios)
    func scenario(_ scenario: BrowserHarness.Scenario) async throws {
        try await BrowserHarness.requireBrowser()
        // Sends that name no category ignore them: only the preferences scenario sees them.
        try await BrowserHarness.withServe(
            "browser", environment: { _ in ["HERALD_PREFERENCE_CATEGORIES": "orders:mandatory,social,marketing:off"] }
        ) { server in
            try await BrowserHarness.runFlows(
                "browser_flows.py", on: server, leading: [scenario.name], screenshots: scenario.screenshots,
                what: "browser scenario \(scenario.name)", failureScreenshot: "\(scenario.name)-failed.png")
        }
    }

    @Test("every scenario of browser_flows.py is a test case here", BrowserHarness.needsBrowser)
    func everyScenarioRuns() async throws {
        #expect(try await BrowserHarness.listedScenarios(of: "browser_flows.py") == Self.scenarios.map(\.name))
    }
}
