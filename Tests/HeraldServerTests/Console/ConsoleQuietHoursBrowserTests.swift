import Foundation
import HeraldStore
import HeraldTesting
import Testing

/// Quiet hours in the console, in a real browser: `herald serve` as its own process with an app window that holds
/// the moment the test starts (in UTC), and Tests/…/quiet_flows.py driving chromium headless through Playwright. One
/// test case per scenario. Screenshots go to `.build/console-screenshots/`. Skipped without chromium or Playwright,
/// unless `CI` is set.
@Suite("Console in a real browser: quiet hours", .serialized)
struct ConsoleQuietHoursBrowserTests {
    static let scenarios: [BrowserHarness.Scenario] = [
        .init(name: "compose", screenshots: ["compose-quiet-deferred", "compose-quiet-dropped"]),
        .init(name: "send", screenshots: ["send-quiet-deferred", "send-quiet-dropped"]),
        .init(name: "preferences", screenshots: ["device-quiet-hours"]),
    ]

    /// A window of the minutes from `start` to `end` after the current UTC minute (negative: before it).
    static func window(from start: Int, to end: Int) -> String {
        let now = QuietHours.minuteOfDay(Date(), in: TimeZone(identifier: "UTC")!)
        func minute(_ offset: Int) -> String { QuietHours.text(ofMinute: ((now + offset) % 1_440 + 1_440) % 1_440) }
        return "\(minute(start))-\(minute(end))"
    }

    @Test(
        "quiet hours in chromium: the compose page's dry run and the send page count deferred and dropped devices; a device's page shows and edits its person's own window",
        BrowserHarness.needsBrowser, .timeLimit(.minutes(5)), arguments: scenarios)
    func scenario(_ scenario: BrowserHarness.Scenario) async throws {
        try await BrowserHarness.requireBrowser()
        // Quiet from an hour ago to two hours on in UTC; twelve hours away, and in nora's own window, awake.
        let appWindow = Self.window(from: -60, to: 120)
        let awake = Self.window(from: 360, to: 420)
        try await BrowserHarness.withServe("quiet-browser", environment: { _ in ["HERALD_QUIET_HOURS": appWindow] }) {
            server in
            try await BrowserHarness.runFlows(
                "quiet_flows.py", on: server, leading: [scenario.name], trailing: [awake], screenshots: scenario.screenshots,
                what: "quiet-hours scenario \(scenario.name)", failureScreenshot: "quiet-\(scenario.name)-failed.png")
        }
    }

    @Test("every scenario of quiet_flows.py is a test case here", BrowserHarness.needsBrowser)
    func everyScenarioRuns() async throws {
        #expect(try await BrowserHarness.listedScenarios(of: "quiet_flows.py") == Self.scenarios.map(\.name))
    }
}
