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
    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let screenshots: [String]

        var testDescription: String { name }
    }

    static let scenarios = [
        Scenario(name: "compose", screenshots: ["compose-quiet-deferred", "compose-quiet-dropped"]),
        Scenario(name: "send", screenshots: ["send-quiet-deferred", "send-quiet-dropped"]),
        Scenario(name: "preferences", screenshots: ["device-quiet-hours"]),
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
    func scenario(_ scenario: Scenario) async throws {
        try await BrowserHarness.requireBrowser()
        // Quiet from an hour ago to two hours on in UTC; twelve hours away, and in nora's own window, awake.
        let appWindow = Self.window(from: -60, to: 120)
        let awake = Self.window(from: 360, to: 420)
        try await BrowserHarness.withServe("quiet-browser", environment: { _ in ["HERALD_QUIET_HOURS": appWindow] }) {
            server in
            let link = try await BrowserHarness.signInLink(server)
            let screenshots = BrowserHarness.screenshots
            for name in scenario.screenshots {
                try? FileManager.default.removeItem(at: screenshots.appendingPathComponent(name + ".png"))
            }
            let result = try await ProcessRunner.run(
                "python3",
                [
                    BrowserHarness.script("quiet_flows.py").path, scenario.name, "http://127.0.0.1:\(server.port)", link,
                    screenshots.path, awake,
                ])
            #expect(
                result.status == 0,
                "quiet-hours scenario \(scenario.name) failed (screenshot: quiet-\(scenario.name)-failed.png):\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
            for name in scenario.screenshots {
                #expect(
                    FileManager.default.fileExists(atPath: screenshots.appendingPathComponent(name + ".png").path),
                    "screenshot \(name)")
            }
        }
    }

    @Test("every scenario of quiet_flows.py is a test case here", BrowserHarness.needsBrowser)
    func everyScenarioRuns() async throws {
        let listed = try await ProcessRunner.run("python3", [BrowserHarness.script("quiet_flows.py").path, "--list"])
        #expect(listed.status == 0, "\(listed.standardError)")
        #expect(listed.standardOutput.split(separator: "\n").map(String.init) == Self.scenarios.map(\.name))
    }
}
