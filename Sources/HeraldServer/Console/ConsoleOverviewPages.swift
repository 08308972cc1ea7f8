import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// The console's overview (the deployment's figures, charts, APNs connections and checks; a limited session's own
/// apps' latest sends) and the emulator's inboxes.
struct ConsoleOverviewPages: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]
    let emulator: APNSEmulator?
    /// The APNs clients' latency and open connections, read when the overview renders.
    let apnsStatistics: @Sendable () -> [SenderStatistics]
    let clock: any WallClock
    /// The overview's device counts, recounted in the background once counting is slow.
    let deviceFigures: DeviceFigures
    /// `herald doctor`'s checks as the server ran them at start; `nil` until they have run.
    let deploymentChecks: @Sendable () -> DeploymentReport?

    func addRoutes(to viewer: RouterGroup<ServerRequestContext>) {
        viewer.get("/console", use: overview)
        viewer.get("/console/emulator", use: emulatorInboxes)
    }

    private static let day: TimeInterval = 86_400

    // MARK: Overview

    @Sendable func overview(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        if Self.isScoped(context), let key = session.apiKey { return try await scopedOverview(key, context: context) }
        let now = clock.now()
        let today = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / Self.day).rounded(.down) * Self.day)
        async let counted = deviceFigures.snapshot()
        async let lastDay = store.sendStatistics(since: now.addingTimeInterval(-Self.day), reasons: 5)
        async let lastWeek = store.sendStatistics(since: now.addingTimeInterval(-7 * Self.day), reasons: 6)
        async let perDay = store.sendsPerDay(since: today.addingTimeInterval(-6 * Self.day))
        let snapshot = try await counted
        let statistics = snapshot.devices
        let day = try await lastDay
        let week = try await lastWeek

        let newByDay = Dictionary(snapshot.newDevices.map { ($0.day, $0.count) }, uniquingKeysWith: +)
        let sendsByDay = Dictionary(try await perDay.map { ($0.day, $0.counts) }, uniquingKeysWith: { a, _ in a })
        let fortnight = (0..<14).map { today.addingTimeInterval(Double($0 - 13) * Self.day) }
        let sevenDays = fortnight.suffix(7)
        let outcomeSeries = [
            ConsoleCharts.Series(name: "accepted", style: 1), ConsoleCharts.Series(name: "rejected", style: 2),
            ConsoleCharts.Series(name: "failed", style: 3),
        ]
        func outcomes(_ statistics: SendStatistics, _ label: String) -> String {
            ConsoleCharts.bars(
                [
                    Tally("accepted", statistics.counts.accepted), Tally("rejected", statistics.counts.rejected),
                    Tally("failed", statistics.counts.failed), Tally("tokens removed", statistics.removed),
                ], label: label)
        }
        let deviceCharts = [
            ("by-app", "Devices by app", statistics.byTopic, "unknown"),
            ("by-environment", "Devices by environment", statistics.byEnvironment, "unknown"),
            ("by-kind", "Devices by token kind", statistics.byTokenKind, "unknown"),
            ("by-platform", "Devices by platform", statistics.byPlatform, "not reported"),
        ].map { id, title, tallies, empty in
            OverviewView.Chart(id: id, title: title, svg: ConsoleCharts.bars(tallies, label: title, emptyName: empty))
        }
        let view = OverviewView(
            devices: statistics.total,
            noDevices: statistics.total == 0,
            // nil, not "": Mustache renders a section for any string, the empty one too ("counted at : …").
            devicesCountedAt: snapshot.fromCache ? RFC3339.string(snapshot.countedAt) : nil,
            emptyDevices: emptyDevices(request),
            day: OverviewView.Figures(day), week: OverviewView.Figures(week),
            deviceCharts: deviceCharts,
            newDevicesChart: ConsoleCharts.days(
                fortnight.map { ($0, [newByDay[$0] ?? 0]) }, series: [.init(name: "new devices", style: 1)],
                label: "New devices per day over the last 14 days"),
            sendsChart: ConsoleCharts.days(
                sevenDays.map { date in
                    let counts = sendsByDay[date] ?? OutcomeCounts()
                    return (date, [counts.accepted, counts.rejected, counts.failed])
                }, series: outcomeSeries, label: "Accepted, rejected and failed notifications per day, last 7 days"),
            dayChart: outcomes(day, "Outcomes of the last 24 hours"),
            weekChart: outcomes(week, "Outcomes of the last 7 days"),
            hasReasons: !week.topReasons.isEmpty,
            reasons: week.topReasons.map(\.name),
            reasonsChart: ConsoleCharts.bars(week.topReasons, label: "Top rejection reasons of the last 7 days"),
            apns: apnsFigures(),
            checks: deploymentChecksView())
        return renderer.page("overview", title: "Overview", section: .overview, view: view, context: context)
    }

    /// overview.mustache's values. The charts are SVG markup the server drew (``ConsoleCharts``).
    struct OverviewView: ConsoleView {
        /// A period's sends and what became of them.
        struct Figures {
            let sends: Int
            let accepted: Int
            let rejected: Int
            let removed: Int
            let received: Int
            let opened: Int
            /// Empty when nothing was accepted.
            let receivedRate: String
            let openedRate: String

            init(_ statistics: SendStatistics) {
                let rates = ReceiptRates(statistics.receipts, accepted: statistics.counts.accepted)
                sends = statistics.sends
                accepted = statistics.counts.accepted
                rejected = statistics.counts.rejected
                removed = statistics.removed
                received = statistics.receipts.received
                opened = statistics.receipts.opened
                receivedRate = rates.map { ReceiptRates.percent($0.received) } ?? ""
                openedRate = rates.map { ReceiptRates.percent($0.opened) } ?? ""
            }
        }

        struct Chart {
            let id: String
            let title: String
            let svg: String
        }

        /// `herald doctor`'s checks as the server ran them at start.
        struct Checks {
            struct Check {
                let name: String
                let status: String
                let mark: String
                let style: String
                let message: String
            }

            let ran: Bool
            let summary: String?
            let list: [Check]
        }

        let devices: Int
        let noDevices: Bool
        /// When the device figures were counted, for a registry large enough to be counted in the background.
        let devicesCountedAt: String?
        let emptyDevices: String
        let day: Figures
        let week: Figures
        let deviceCharts: [Chart]
        let newDevicesChart: String
        let sendsChart: String
        let dayChart: String
        let weekChart: String
        let hasReasons: Bool
        let reasons: [String]
        let reasonsChart: String
        let apns: APNSFigures
        let checks: Checks
    }

    /// The overview of a session limited to some apps: its limits and its apps' latest sends. The deployment's
    /// figures count every app (their store queries have no app filter), so they are not shown.
    private func scopedOverview(_ key: APIKey, context: ServerRequestContext) async throws -> Response {
        let page = try await store.recentSends(after: nil, limit: 10, topics: Self.access(context).topics)
        let rows = page.sends.map { send in
            ScopedOverviewView.Send(
                id: send.id.description, createdAt: Self.display(send.createdAt), target: send.target,
                status: send.status.rawValue, accepted: send.counts.accepted, rejected: send.counts.rejected)
        }
        let view = ScopedOverviewView(
            keyName: key.name, appList: visibleApps(context).joined(separator: ", "),
            single: visibleApps(context).count == 1, sends: rows, hasSends: !rows.isEmpty,
            environment: key.environment?.name)
        return renderer.page("overview-scoped", title: "Overview", section: .overview, view: view, context: context)
    }

    /// overview-scoped.mustache's values.
    struct ScopedOverviewView: ConsoleView {
        struct Send {
            let id: String
            let createdAt: String
            let target: String
            let status: String
            let accepted: Int
            let rejected: Int
        }

        let keyName: String
        let appList: String
        /// Whether the key is limited to one app.
        let single: Bool
        let sends: [Send]
        let hasSends: Bool
        /// The environment the key is limited to, if any.
        let environment: String?
    }

    /// `herald doctor`'s checks as the server ran them at start, for the overview.
    private func deploymentChecksView() -> OverviewView.Checks {
        guard let report = deploymentChecks() else { return OverviewView.Checks(ran: false, summary: nil, list: []) }
        let styles: [DeploymentCheck.Status: String] = [.ok: "ok", .warning: "warn", .failure: "bad", .skipped: "skipped"]
        return OverviewView.Checks(
            ran: true, summary: report.summary,
            list: report.checks.map { check in
                OverviewView.Checks.Check(
                    name: check.name, status: check.status.rawValue, mark: check.status.mark,
                    style: styles[check.status] ?? "", message: check.message)
            })
    }

    // MARK: Emulator

    @Sendable func emulatorInboxes(_ request: Request, context: ServerRequestContext) async throws -> Response {
        // The inboxes hold every app's devices.
        try Self.access(context).requireUnscoped("the emulator's inboxes")
        guard let emulator else {
            throw APIError(
                .notFound, reason: "noEmulator", "This server sends to APNs, not to the in-process emulator.")
        }
        let search = (try request.queryParameter("q") ?? "").lowercased().filter(\.isHexDigit)
        let matching = emulator.devices().filter { search.isEmpty || $0.token.hex.hasSuffix(search) }
            .sorted { $0.token.hex < $1.token.hex }
        let shown = matching.prefix(20)
        let devices = shown.map { device in
            let entries = ((try? emulator.inbox(for: device.token)) ?? []).reversed()
            let rows = entries.prefix(10).map { entry in
                EmulatorView.Entry(
                    receivedAt: Self.display(entry.receivedAt), pushType: entry.pushType ?? "—",
                    payload: entry.payloadString)
            }
            return EmulatorView.Device(
                suffix: String(device.token.hex.suffix(8)), environment: device.environment.name,
                count: entries.count, entries: rows, hasEntries: !rows.isEmpty)
        }
        let view = EmulatorView(
            q: search, devices: devices, hasDevices: !devices.isEmpty,
            more: matching.count > shown.count
                ? "Showing 20 of \(matching.count) virtual devices: search by the last digits of a token." : nil)
        return renderer.page("emulator", title: "Emulator", section: .emulator, view: view, context: context)
    }

    /// emulator.mustache's values.
    struct EmulatorView: ConsoleView {
        struct Entry {
            let receivedAt: String
            let pushType: String
            let payload: String
        }

        struct Device {
            let suffix: String
            let environment: String
            /// Everything in the inbox; ``entries`` holds the newest 10.
            let count: Int
            let entries: [Entry]
            let hasEntries: Bool
        }

        let q: String
        let devices: [Device]
        let hasDevices: Bool
        /// Says that only some of the matching devices are shown.
        let more: String?
    }
}
