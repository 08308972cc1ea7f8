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
        BrowserHarness.needsBrowser, .timeLimit(.minutes(5)))
    func traceAndBudget() async throws {
        try await BrowserHarness.requireBrowser()
        try await BrowserHarness.withServe("trace-browser", environment: { _ in ["HERALD_LIVE_ACTIVITY_BUDGET": "2"] }) {
            server in
            try await BrowserHarness.runFlows(
                "trace_flows.py", on: server, screenshots: ["trace", "activities-budget"], what: "trace flows")
        }
    }
}
