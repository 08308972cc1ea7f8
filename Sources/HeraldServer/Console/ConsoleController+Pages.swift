import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

extension ConsoleController {
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

    // MARK: Compose

    @Sendable func compose(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let token = try request.queryParameter("token").flatMap { try? DeviceToken(hex: $0) }?.hex
        let kind = token == nil ? "user" : "token"
        let view = ComposeView(
            apps: visibleApps(context), firstApp: visibleApps(context).first ?? "",
            pushTypes: APNSPushType.allCases.filter { $0 != .mdm }.map(\.rawValue),
            kindToken: kind == "token", kindUser: kind == "user", kindTag: false, kindTopic: false,
            targetValue: token ?? "", testToken: token ?? "",
            title: token == nil ? "" : "Test from the Herald console",
            body: token == nil ? "" : "If you can read this, pushes reach this device.")
        return renderer.page(
            "compose", title: "Compose", section: .compose, view: view, context: context, scripts: ["compose.js"])
    }

    /// compose.mustache's values: an empty form, or one filled in for a test push to a device.
    struct ComposeView: ConsoleView {
        let apps: [String]
        let firstApp: String
        let pushTypes: [String]
        /// Which kind of target the form starts with.
        let kindToken: Bool
        let kindUser: Bool
        let kindTag: Bool
        let kindTopic: Bool
        let targetValue: String
        let testToken: String
        let title: String
        let body: String
    }

    // MARK: Sends

    @Sendable func sends(_ request: Request, context: ServerRequestContext) async throws -> Response {
        var cursor: SendListCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty {
            guard let parsed = SendListCursor(after) else {
                throw APIError.invalidField("after", "use the link of the previous page")
            }
            cursor = parsed
        }
        let page = try await store.recentSends(after: cursor, limit: 25, topics: Self.access(context).topics)
        let now = clock.now()
        let rows = page.sends.map { send in
            SendsView.Row(
                progress: SendProgress(send), id: send.id.description, createdAt: Self.display(send.createdAt),
                target: send.target, summary: send.summary, status: send.status.rawValue,
                schedule: Self.schedule(of: send, now: now))
        }
        let view = SendsView(sends: rows, hasSends: !rows.isEmpty, next: page.next.map { "/console/sends?after=\($0)" })
        return renderer.page("sends", title: "Sends", section: .sends, view: view, context: context)
    }

    /// sends.mustache's values.
    struct SendsView: ConsoleView {
        struct Row: ComposedView {
            let progress: SendProgress
            let id: String
            let createdAt: String
            let target: String
            let summary: String
            let status: String
            let schedule: Schedule?

            var parts: [Any] { [progress] }
        }

        let sends: [Row]
        let hasSends: Bool
        let next: String?
    }

    /// A send's counts and progress, for templates.
    struct SendProgress {
        let done: Int
        /// At least 1, for the progress bar's `max`.
        let total: Int
        let percent: Int
        let accepted: Int
        let rejected: Int
        let failed: Int
        let capped: Int
        let preferenceOut: Int
        /// What the rules about the person removed or deferred, in words (``suppressedText(_:)``).
        let suppressed: String

        init(_ send: SendRecord) {
            // Devices a frequency cap left out are among the target count, and done: they get nothing.
            done = send.counts.total + send.suppressed.frequencyCap
            let total = max(send.targetCount ?? done, done)
            self.total = max(total, 1)
            percent = total == 0 ? 100 : done * 100 / total
            accepted = send.counts.accepted
            rejected = send.counts.rejected
            failed = send.counts.failed
            capped = send.suppressed.frequencyCap
            preferenceOut = send.suppressed.preference
            suppressed = ConsoleController.suppressedText(send.suppressed)
        }
    }

    /// What the rules about the person removed or deferred, in words; empty when none applied.
    static func suppressedText(_ counts: SuppressedCounts) -> String {
        var parts: [String] = []
        if counts.preference > 0 { parts.append("\(counts.preference) opted out of the category") }
        if counts.frequencyCap > 0 { parts.append("\(counts.frequencyCap) over a frequency cap") }
        if counts.quietHoursDropped > 0 { parts.append("\(counts.quietHoursDropped) dropped in their quiet hours") }
        if counts.quietHoursDeferred > 0 {
            parts.append("\(counts.quietHoursDeferred) deferred to the end of their quiet hours")
        }
        return parts.isEmpty ? "" : "Rules: " + parts.joined(separator: ", ") + "."
    }

    /// How a scheduled send (queued, with a `sendAt` still ahead) reads: `Scheduled for <time>`, and for a send at
    /// each device's local time, that time and its next wave; `nil` for any other send.
    static func schedule(of send: SendRecord, now: Date) -> Schedule? {
        guard send.status == .queued, let sendAt = send.sendAt, sendAt > now else { return nil }
        var schedule = Schedule(at: display(sendAt), instant: RFC3339.string(sendAt))
        // Only a scheduled send's job is read (a `tokens` send's can be large): the local time is nowhere else. Jobs of
        // both versions (the request body, and SendJob's stored form) name it `localTime` and its zone `timeZone`.
        if let job = send.job, let stored = try? JSONValue(parsing: job),
            let local = stored["localTime"]?.stringValue.flatMap(LocalDateTime.init)
        {
            // As people write it: 2026-12-24 09:00, with the seconds only when there are some.
            let text = local.description.replacingOccurrences(of: "T", with: " ")
            schedule.localTime = local.second == 0 ? String(text.dropLast(3)) : text
            // Foundation on Linux names the default zone, UTC, "GMT": a version-2 job stores that name.
            let zone = stored["timeZone"]?.stringValue ?? "UTC"
            schedule.unsetZone = zone == "GMT" ? "UTC" : zone
        }
        return schedule
    }

    /// When a scheduled send goes out, for templates.
    struct Schedule {
        /// As pages show a time, and as RFC 3339 for `<time datetime>`.
        let at: String
        let instant: String
        /// The local time of a send at each device's local time, and the zone of devices without one.
        var localTime: String?
        var unsetZone: String?
    }

    @Sendable func send(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(SendID.init) else { throw Self.noSuchSend }
        let send = try await resources.send(id, for: Self.access(context))
        var cursor: OutcomeCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty { cursor = OutcomeCursor(after) }
        async let groups = endedSendGroups.groups(of: send, in: store)
        async let page = store.outcomes(of: id, after: cursor, limit: 50)
        async let receipts = store.receiptCounts(of: id)
        var shards: [SendView.Shard] = []
        var shardSummary: String?
        if send.shardCount != nil {
            let all = try await store.shards(of: id)
            // A send to ten million devices has a thousand shards: a table of them all made the page cost 60 ms to
            // render and told no one anything. The ones not done yet are the ones to see.
            let listed = all.count <= Self.shardsListed ? all : Array(all.filter { $0.status != .done }.prefix(Self.shardsListed))
            shards = listed.map { shard in
                SendView.Shard(
                    index: shard.index, status: shard.status.rawValue, worker: shard.worker ?? "—",
                    recorded: shard.recorded, size: shard.size)
            }
            if listed.count < all.count {
                let counted = SendShard.Status.allCases.compactMap { status -> String? in
                    let count = all.count { $0.status == status }
                    return count == 0 ? nil : "\(count) \(status.rawValue)"
                }
                shardSummary = "\(all.count) shards: \(counted.joined(separator: ", ")). "
                    + (shards.isEmpty ? "Every one is done." : "The first \(shards.count) not done are listed.")
            }
        }
        let counts = try await receipts
        let rates = ReceiptRates(counts, accepted: send.counts.accepted)
        let groupRows = try await groups.map { group in
            SendView.Group(
                kind: group.kind, reason: group.reason ?? "—", count: group.count,
                action: group.action.map(Self.describe) ?? "—")
        }
        let outcomes = try await page
        let reveal = Self.revealsTokens(context)
        let outcomeRows = outcomes.outcomes.map { outcome in
            SendView.Outcome(
                token: reveal ? outcome.token.hex : nil, suffix: String(outcome.token.hex.suffix(8)),
                environment: outcome.environment.name, status: outcome.result.kind, detail: Self.detail(outcome),
                at: Self.display(outcome.at))
        }
        let view = SendView(
            progress: SendProgress(send), id: send.id.description, target: send.target, summary: send.summary,
            status: send.status.rawValue, createdAt: Self.display(send.createdAt),
            cancellable: send.status == .queued || send.status == .running, lane: send.lane.rawValue,
            worker: send.status == .running ? send.worker : nil, shardCount: send.shardCount, shards: shards,
            hasShards: !shards.isEmpty || shardSummary != nil, listsShards: !shards.isEmpty, shardSummary: shardSummary,
            schedule: Self.schedule(of: send, now: clock.now()), message: send.message,
            messageClass: send.message == nil ? nil : send.status == .failed ? "error" : "hint",
            received: counts.received, opened: counts.opened, actions: counts.actions, dismissed: counts.dismissed,
            receivedRate: rates.map { ReceiptRates.percent($0.received) } ?? "—",
            openedRate: rates.map { ReceiptRates.percent($0.opened) } ?? "—", groups: groupRows,
            hasGroups: !groupRows.isEmpty, outcomes: outcomeRows, hasOutcomes: !outcomeRows.isEmpty,
            next: outcomes.next.map { "/console/sends/\(id)?after=\($0)" }, first: cursor == nil ? nil : "/console/sends/\(id)")
        return renderer.page(
            "send", title: "Send to \(send.target)", section: .sends, view: view, context: context,
            scripts: ["send.js"])
    }

    /// The most shards a send's page lists; beyond, it lists those not done yet and counts the rest.
    static let shardsListed = 20

    /// send.mustache's values.
    struct SendView: ConsoleView, ComposedView {
        struct Shard {
            let index: Int
            let status: String
            let worker: String
            let recorded: Int
            let size: Int
        }

        /// Ended devices of one kind, reason and action.
        struct Group {
            let kind: String
            let reason: String
            let count: Int
            let action: String
        }

        struct Outcome {
            /// The whole token, for a role that sees it (``revealsTokens(_:)``); else only ``suffix``.
            let token: String?
            let suffix: String
            let environment: String
            let status: String
            let detail: String
            let at: String
        }

        let progress: SendProgress
        let id: String
        let target: String
        let summary: String
        let status: String
        let createdAt: String
        let cancellable: Bool
        let lane: String
        /// The instance running the send, while it runs.
        let worker: String?
        let shardCount: Int?
        let shards: [Shard]
        let hasShards: Bool
        let listsShards: Bool
        /// How many shards are in each status, when the table lists only some.
        let shardSummary: String?
        let schedule: Schedule?
        let message: String?
        let messageClass: String?
        let received: Int
        let opened: Int
        let actions: Int
        let dismissed: Int
        let receivedRate: String
        let openedRate: String
        let groups: [Group]
        let hasGroups: Bool
        let outcomes: [Outcome]
        let hasOutcomes: Bool
        let next: String?
        let first: String?

        var parts: [Any] { [progress] }
    }

    /// Cancels a queued or running send from its page (a form with the session's CSRF token), then shows the page.
    @Sendable func cancelSend(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        guard let id = context.parameters.get("id").flatMap(SendID.init) else { throw Self.noSuchSend }
        _ = try await resources.send(id, for: Self.access(context))
        do {
            let record = try await engine.cancel(id)
            context.logger.notice("Console cancelled a send", metadata: [LogKey.sendID: "\(id)"])
            await audit.record(.sendCancelled, context, app: record.topic, subject: id.description, detail: record.target)
        } catch let error as SendError where error.code == .sendFinished {
            // It ended meanwhile: its page shows how.
        } catch let error as SendError where error.code == .unknownSend {
            throw Self.noSuchSend
        }
        return Self.redirect("/console/sends/\(id)")
    }

    static func describe(_ action: DeliveryOutcome.Action) -> String {
        switch action {
        case .removed: "token removed from sends"
        case .kept: "token kept (registered again after APNs's answer)"
        case .environmentCorrected: "environment corrected"
        }
    }

    /// An outcome's detail in words: the apns-id, the reason and what Herald did, or the failure.
    static func detail(_ outcome: DeliveryOutcome) -> String {
        var text: String
        switch outcome.result {
        case .accepted(let apnsID): text = "apns-id \(apnsID.headerValue)"
        case .rejected(let status, let reason, _): text = "\(status) \(reason.rawValue)"
        case .failed(let message): text = message
        }
        if let action = outcome.action { text += "; " + describe(action) }
        return text
    }

    // MARK: Devices

    @Sendable func devices(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let search = (try request.queryParameter("q") ?? "").trimmingCharacters(in: .whitespaces)
        let user = (try request.queryParameter("user") ?? "").trimmingCharacters(in: .whitespaces)
        let tag = (try request.queryParameter("tag") ?? "").trimmingCharacters(in: .whitespaces)
        let app = try chosenApp(request.queryParameter("app"), context)
        var data = DevicesView(q: search, user: user, tag: tag, apps: appChoices(app, context))
        if let removed = try request.queryParameter("removed") {
            data.notice = "Device …\(removed) removed: it gets no pushes until its app registers it again."
        }
        var found: [DeviceRegistration] = []
        var description: String
        let filtered = !search.isEmpty || !user.isEmpty || !tag.isEmpty
        if !search.isEmpty {
            let hex = search.lowercased().filter { !" <>".contains($0) }
            guard hex.count >= 4, hex.count <= 1024, hex.allSatisfy(\.isHexDigit) else {
                data.error = "Search a token by at least 4 of its hex digits, such as its last 8."
                return renderer.page("devices", title: "Devices", section: .devices, view: data, context: context)
            }
            let access = Self.access(context)
            found = try await store.devices(withTokenSuffix: hex, limit: 50).filter {
                access.sees(app: $0.topic) && access.sees(environment: $0.environment)
            }
            description = "Tokens ending in \(hex)"
        } else {
            var query: DeviceQuery
            if !user.isEmpty {
                query = .user(user)
                description = "Devices of user \(user)"
            } else if !tag.isEmpty {
                query = .tag(tag)
                description = "Devices tagged \(tag)"
            } else {
                query = .topic(app)
                description = "Devices of \(app)"
            }
            query = query.inTopic(app).includingInvalidated()
            if let environment = Self.access(context).environment { query = query.environment(environment) }
            var cursor: DeviceCursor?
            if let after = try request.queryParameter("after"), !after.isEmpty { cursor = DeviceCursor(after) }
            let page = try await store.devices(matching: query, after: cursor, limit: 50)
            found = page.devices
            if let next = page.next {
                data.next = Self.link(
                    "/console/devices", [("user", user), ("tag", tag), ("app", app), ("after", next.description)])
            }
        }
        if search.isEmpty, !user.isEmpty, !found.isEmpty {
            // The user view: the person's choices in the app, which hold on every device of theirs.
            data.userPreferences = try await preferenceSection(
                topic: app, subject: .user(user), returnTo: Self.link("/console/devices", [("user", user), ("app", app)]),
                context: context)
        }
        if try request.queryParameter("preferences") != nil { data.notice = "The preferences were saved." }
        data.description = description
        let reveal = Self.revealsTokens(context)
        data.rows = found.map { device in
            var row = DeviceRow(device)
            if !reveal { row.token = nil }
            return row
        }
        data.hasRows = !found.isEmpty
        if found.isEmpty {
            if filtered {
                data.searchedNothing = true
            } else {
                data.noDevices = true
                data.emptyDevices = emptyDevices(request)
            }
        }
        return renderer.page("devices", title: "Devices", section: .devices, view: data, context: context)
    }

    /// devices.mustache's values: a search or a list of devices, filled in as the page finds them.
    struct DevicesView: ConsoleView {
        let q: String
        let user: String
        let tag: String
        let apps: [AppChoice]
        var notice: String?
        var error: String?
        var next: String?
        /// The person's choices, when the page lists one user's devices (preferences.mustache's values).
        var userPreferences: PreferencesView?
        var description: String?
        var rows: [DeviceRow] = []
        var hasRows = false
        var searchedNothing = false
        var noDevices = false
        /// empty-devices.mustache, rendered.
        var emptyDevices: String?
    }

    /// Whether the session's pages show whole device tokens (and link to device and delivery pages by them): not to
    /// a viewer, who sees `…` and the last 8 hex digits, as a read-only API key does (docs/security.md).
    static func revealsTokens(_ context: ServerRequestContext) -> Bool {
        context.consoleSession.map { ConsoleRole($0) > .viewer } ?? false
    }

    /// A registration as a table row.
    struct DeviceRow {
        /// The whole token; `nil` where the role sees only ``suffix`` (``revealsTokens(_:)``).
        var token: String?
        let suffix: String
        let topic: String
        let environment: String
        let kind: String
        let platform: String
        let user: String
        let tags: String
        let registeredAt: String
        let active: Bool

        init(_ device: DeviceRegistration) {
            let registration = device.registration
            token = registration.token.hex
            suffix = String(registration.token.hex.suffix(8))
            topic = registration.topic
            environment = registration.environment.name
            kind = registration.tokenKind.name
            platform = registration.platform?.name ?? "—"
            user = registration.userID ?? "—"
            tags = registration.tags.joined(separator: ", ")
            registeredAt = ConsoleController.display(device.registeredAt)
            active = device.isActive
        }
    }

    private func deviceToken(_ context: ServerRequestContext) throws -> DeviceToken {
        guard let hex = context.parameters.get("token"), let token = try? DeviceToken(hex: hex) else {
            throw APIError(.notFound, reason: "unknownToken", "There is no such device: search for it by token.")
        }
        return token
    }

    @Sendable func device(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let token = try deviceToken(context)
        let device = try await resources.device(token, for: Self.access(context))
        let deliveries = try await store.deliveries(to: token, limit: 50)
        let registration = device.registration
        var removals = deliveries.compactMap { delivery -> DeviceView.Removal? in
            guard delivery.outcome.action != nil else { return nil }
            return DeviceView.Removal(
                at: Self.display(delivery.outcome.at),
                what: "\(Self.detail(delivery.outcome)) (send to \(delivery.target))")
        }
        if let invalidation = device.invalidation {
            removals.insert(
                DeviceView.Removal(
                    at: Self.display(invalidation.recordedAt),
                    what: "removed from sends after APNs answered \(invalidation.reason.rawValue)"
                        + (invalidation.apnsTimestamp.map { " (APNs timestamp \(Self.display($0)))" } ?? "")),
                at: 0)
        }
        var preferences: PreferencesView?
        if device.isActive {
            preferences = try await preferenceSection(
                topic: device.topic, subject: PreferenceSubject(of: registration),
                returnTo: "/console/devices/\(token.hex)", context: context)
        }
        let saved = try request.queryParameter("preferences") != nil
        let view = DeviceView(
            row: DeviceRow(device), languages: registration.preferredLanguages.joined(separator: ", "),
            appVersion: registration.appVersion ?? "—", installation: registration.installationID?.lowercasedText ?? "—",
            createdAt: Self.display(device.createdAt),
            deliveries: deliveries.map { delivery in
                DeviceView.Delivery(
                    at: Self.display(delivery.outcome.at), sendID: delivery.sendID.description,
                    target: delivery.target, summary: delivery.summary, status: delivery.outcome.result.kind,
                    detail: Self.detail(delivery.outcome))
            },
            hasDeliveries: !deliveries.isEmpty, removals: removals, hasRemovals: !removals.isEmpty,
            preferences: preferences, notice: saved ? "The preferences were saved." : nil)
        return renderer.page(
            "device", title: "Device …\(token.hex.suffix(8))", section: .devices, view: view, context: context)
    }

    /// device.mustache's values: the registration's row, and more.
    struct DeviceView: ConsoleView, ComposedView {
        struct Delivery {
            let at: String
            let sendID: String
            let target: String
            let summary: String
            let status: String
            let detail: String
        }

        /// When and why the device was taken out of sends.
        struct Removal {
            let at: String
            let what: String
        }

        let row: DeviceRow
        let languages: String
        let appVersion: String
        let installation: String
        let createdAt: String
        let deliveries: [Delivery]
        let hasDeliveries: Bool
        let removals: [Removal]
        let hasRemovals: Bool
        /// The device's person's choices (preferences.mustache's values), while the device is active.
        let preferences: PreferencesView?
        let notice: String?

        var parts: [Any] { [row] }
    }

    @Sendable func removeDevice(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        let token = try deviceToken(context)
        // The device page's check: a session limited to an environment removed the other's devices before.
        let removed = try await resources.device(token, for: Self.access(context))
        _ = try await store.remove(token)
        context.logger.notice("Console removed a device", metadata: [LogKey.tokenSuffix: "\(token.redacted)"])
        await audit.record(.deviceRemoved, context, app: removed.topic, subject: token.redacted)
        return Self.redirect("/console/devices?removed=\(token.hex.suffix(8))")
    }

    // MARK: API keys

    @Sendable func keys(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try Self.access(context).requireUnscoped("managing keys")
        let revoked = try request.queryParameter("revoked") != nil
        return try await keysPage(
            KeysView.Outcome(notice: revoked ? "The key was revoked: it no longer works." : nil), context: context)
    }

    private func keysPage(
        _ outcome: KeysView.Outcome, context: ServerRequestContext, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let now = clock.now()
        let stored = try await store.apiKeys()
        let keys = stored.reversed().map { key in
            let apps = key.apps.isEmpty ? "every app" : key.apps.sorted().joined(separator: ", ")
            return KeysView.Key(
                id: key.id.lowercasedText, name: key.name, prefix: key.prefix.isEmpty ? "—" : key.prefix,
                scopes: key.scopes.sorted().map(\.rawValue).joined(separator: ", "),
                limits: apps + (key.environment.map { " (\($0.name))" } ?? ""),
                createdAt: Self.display(key.createdAt), active: key.isUsable(at: now),
                expired: key.isActive && key.isExpired(at: now), revoked: !key.isActive,
                lastUsedAt: key.lastUsedAt == nil ? "never" : Self.display(key.lastUsedAt),
                revokedAt: Self.display(key.revokedAt), expiresAt: key.expiresAt.map(Self.display))
        }
        var unscopedWarning: String?
        let unscoped = stored.filter { $0.isUsable(at: now) && !$0.isScoped && !$0.allows(.admin) }
        if appIDs.count > 1, !unscoped.isEmpty {
            unscopedWarning =
                "This server has \(appIDs.count) apps, and \(unscoped.count) active key\(unscoped.count == 1 ? "" : "s") without apps (\(unscoped.map(\.name).sorted().joined(separator: ", "))) may send to all of them: make one key per app and revoke these."
        }
        let view = KeysView(
            notice: outcome.notice, error: outcome.error, created: outcome.created, apps: appIDs,
            unscopedWarning: unscopedWarning, keys: keys, hasKeys: !keys.isEmpty)
        return renderer.page("keys", title: "API keys", section: .keys, view: view, context: context, status: status)
    }

    /// keys.mustache's values.
    struct KeysView: ConsoleView {
        /// What the page says about the change that led to it.
        struct Outcome {
            var notice: String?
            var error: String?
            /// A new key, whose secret is shown once.
            var created: Created?
        }

        struct Created {
            let name: String
            let secret: String
        }

        struct Key {
            let id: String
            let name: String
            let prefix: String
            let scopes: String
            /// The apps and environment the key is limited to, in words.
            let limits: String
            let createdAt: String
            let active: Bool
            let expired: Bool
            let revoked: Bool
            let lastUsedAt: String
            let revokedAt: String
            let expiresAt: String?
        }

        let notice: String?
        let error: String?
        let created: Created?
        let apps: [String]
        let unscopedWarning: String?
        let keys: [Key]
        let hasKeys: Bool
    }

    @Sendable func createKey(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        try Self.access(context).requireUnscoped("making a key")
        let form = try await ConsoleForm.read(request, session: session)
        let creation = APIKeys.Creation(
            name: (form["name"] ?? "").trimmingCharacters(in: .whitespaces),
            scopes: Set(form.all("scope").map { APIKeyScope(rawValue: $0) }), apps: form.all("app"),
            environment: form["environment"].flatMap { $0.isEmpty ? nil : $0 },
            expires: form["expires"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 })
        do {
            let created = try await apiKeys.create(creation, by: context.caller)
            return try await keysPage(
                KeysView.Outcome(created: KeysView.Created(name: created.key.name, secret: created.secret.value)),
                context: context, status: .created)
        } catch let error as APIError where error.status == .badRequest {
            return try await keysPage(KeysView.Outcome(error: error.message), context: context, status: .badRequest)
        }
    }

    @Sendable func revokeKey(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        try Self.access(context).requireUnscoped("revoking a key")
        _ = try await ConsoleForm.read(request, session: session)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError(.notFound, reason: "unknownAPIKey", "There is no such API key: pick one from the list.")
        }
        try await apiKeys.revoke(id, by: context.caller)
        return Self.redirect("/console/keys?revoked=1")
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
