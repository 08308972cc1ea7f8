import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// The console's *Compose* and *Sends* pages: a send with its progress, outcomes and shards, one notification's trace,
/// cancelling; read through ``VisibleResources``, the API's one access check.
struct ConsoleSendPages: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]
    /// Cancels sends, so a send this instance performs stops at once.
    let engine: SendEngine
    /// The apps' frequency caps, for a trace's evidence.
    let apps: AppDirectory
    let clock: any WallClock
    let audit: AuditTrail
    /// Ended sends' outcome groups, counted once.
    let endedSendGroups = EndedSendGroups()

    /// The one access check of the sends and traces the pages show, shared with the API.
    var resources: VisibleResources { VisibleResources(store: store, apps: apps) }

    func addRoutes(viewer: RouterGroup<ServerRequestContext>, operator: RouterGroup<ServerRequestContext>) {
        viewer.get("/console/sends", use: sends)
        viewer.get("/console/sends/{id}", use: send)
        viewer.get("/console/sends/{id}/devices/{token}", use: delivery)
        `operator`.get("/console/compose", use: compose)
        `operator`.post("/console/sends/{id}/cancel", use: cancelSend)
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
            suppressed = ConsoleSendPages.suppressedText(send.suppressed)
        }
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

}
