package import Foundation
import HeraldCore
package import HeraldStore
package import Logging

/// The send engine of one instance, as the HTTP API, the console and the CLI use it: validated sends and broadcasts
/// go in, and each is sent at once while its caller waits (a small target) or queued as a durable job for the
/// ``SendWorker``.
///
/// The adapters parse and validate their input into a ``SendPlan`` or a ``BroadcastPlan``; nothing here reads a
/// request, and no adapter calls another.
package struct SendEngine: Sendable {
    let store: any Store
    let fanOut: FanOut
    let broadcaster: Broadcaster
    let metrics: any SendingMetrics
    /// The background worker: claims queued sends, runs many at once.
    package let worker: SendWorker
    /// The most devices a send may target and still be sent while its caller waits.
    package let inlineLimit: Int
    /// Sends to more devices than this are queued in the campaign lane.
    let campaignThreshold: Int

    /// - Parameters:
    ///   - inlineLimit: The most devices a send may target and still be sent while its caller waits
    ///     (`HERALD_INLINE_SEND_LIMIT`); above, it is queued.
    ///   - campaignThreshold: Sends to more devices than this are queued in the campaign lane.
    package init(
        store: any Store, fanOut: FanOut, broadcaster: Broadcaster, worker: SendWorker, metrics: any SendingMetrics,
        inlineLimit: Int, campaignThreshold: Int
    ) {
        self.store = store
        self.fanOut = fanOut
        self.broadcaster = broadcaster
        self.worker = worker
        self.metrics = metrics
        self.inlineLimit = inlineLimit
        self.campaignThreshold = campaignThreshold
    }

    /// What became of an accepted send.
    package enum Accepted: Sendable {
        /// Sent while the caller waited, and recorded whole: the record, and every device's outcome as it came.
        case sent(SendRecord, [ReportedOutcome])
        /// Queued for a worker (a large target, a schedule or a rate): the record, `queued`.
        case queued(SendRecord)

        /// The send's record.
        package var record: SendRecord {
            switch self {
            case .sent(let record, _), .queued(let record): record
            }
        }
    }

    /// Performs a validated send: at once when its target is small enough and nothing schedules or paces it, else
    /// queued for the worker.
    /// - Parameter audit: The audit log's entry for the request that made the send, stored in the same write as the
    ///   send's record.
    /// - Throws: ``SendError`` `unknownToken` for a single token that is not registered; a store error.
    package func accept(_ plan: SendPlan, logger: Logger, audit: AuditEntry? = nil) async throws -> Accepted {
        var logger = logger
        logger[metadataKey: LogKey.sendID] = "\(plan.sendID)"
        let quiet = try await quietHours(of: plan)
        // A send some of whose devices wait for the end of their quiet hours goes out in waves, from the queue.
        let deferring = quiet.zones != nil && plan.job.quietHours?.mode == .defer
        if !plan.mustRunInBackground, !deferring, pushToStartPace(of: plan) == nil,
            let targets = try await inlineTargets(of: quiet.reached ?? plan)
        {
            // Dropping narrowed the devices read to those not quiet: the whole target has the quiet ones too.
            let whole = targets.count + (quiet.reached == nil ? 0 : quiet.count)
            var (targetCount, suppressed) = try await counted(plan, whole: whole, quiet: quiet)
            let (devices, capped) = try await fanOut.claimFrequencyCaps(
                plan, send: plan.sendID, devices: targets, recordOnSend: false)
            suppressed.frequencyCap = capped.count
            // The job is kept when quiet hours dropped devices: their delivery traces say so from it.
            let new = NewSend(
                id: plan.sendID, target: plan.targetDescription, summary: plan.summary,
                job: suppressed.quietHoursDropped > 0 ? plan.job.jsonText : nil, status: .completed,
                targetCount: targetCount, suppressed: suppressed, topic: plan.bundleID, audit: audit)
            metrics.sendStarted(background: false)
            metrics.suppressed(suppressed)
            // A device whose request was cancelled (the request's task was) has no outcome to record.
            let outcomes = await fanOut.deliver(plan, send: new.id, to: devices).filter { !$0.isCancelled }
            let record = try await store.recordFinishedSend(new, outcomes: outcomes.map(\.outcome))
            logger.info("Sent", metadata: [LogKey.count: "\(record.counts)"])
            return .sent(record, outcomes)
        }
        // A send that starts now goes to the devices registered now, which it counts: one registered while it runs
        // (a long or paced one, or one cut into shards) is not added to it. A scheduled send goes to the devices
        // registered when it runs, and its target count, counted now, is an estimate (docs/server.md).
        let plan = plan.schedule == nil ? plan.registered(through: fanOut.clock.now()) : plan
        let (count, suppressed) = try await counted(
            plan, whole: try await store.count(matching: plan.query), quiet: quiet)
        let record = try await store.createSend(
            NewSend(
                id: plan.sendID, target: plan.targetDescription, summary: plan.summary, job: plan.job.jsonText,
                status: .queued, targetCount: count,
                sendAt: plan.schedule?.firstInstant ?? plan.job.quietHours?.from,
                lane: plan.lane(targetCount: count, campaignThreshold: campaignThreshold), suppressed: suppressed,
                topic: plan.bundleID, audit: audit))
        metrics.sendStarted(background: true)
        metrics.suppressed(suppressed)
        worker.wake()
        logger.info(
            plan.schedule == nil ? "Queued a background send" : "Scheduled a send",
            metadata: [LogKey.count: "\(count)"])
        return .queued(record)
    }

    /// The push-to-start notifications per second a send's app may have, when the send is a start on push-to-start
    /// tokens and starts are paced (``PushToStartPacer``): such a send runs in the background.
    package func pushToStartPace(of plan: SendPlan) -> Int? {
        fanOut.pushToStart.flatMap { $0.applies(to: plan) ? $0.perSecond : nil }
    }

    /// Push-to-start notifications an app may send per second (``PushToStartPacer``); 0 when starts are not paced.
    package var pushToStartRate: Int { fanOut.pushToStart?.perSecond ?? 0 }

    /// The devices a send's quiet-hours rule concerns when it is accepted.
    private struct QuietHoursEffect {
        /// The zones whose devices the send would reach in their quiet hours; `nil`: none (or no rule).
        var zones: DeviceQuery.TimeZoneFilter?
        /// For a send that drops quiet devices, the send narrowed to the others: the devices it ever sends to, and
        /// claims frequency caps for; `nil` otherwise.
        var reached: SendPlan?
        /// How many devices the send would reach in their quiet hours.
        var count = 0
    }

    /// Which of the plan's devices are in their quiet hours when the send reaches them: computed from the time
    /// zones of the target (one query), then counted (one more).
    private func quietHours(of plan: SendPlan) async throws -> QuietHoursEffect {
        guard let rule = plan.job.quietHours else { return QuietHoursEffect() }
        let zones = try await store.timeZones(matching: plan.query)
        let timetable = plan.timetable
        guard let quiet = timetable.quietZones(zones) else { return QuietHoursEffect() }
        var effect = QuietHoursEffect(
            zones: quiet, count: try await store.count(matching: plan.query.timeZones(quiet)))
        if rule.mode == .drop {
            // Every group with a due date, whenever it falls (a `localTime` send's zones differ): the quiet ones have
            // none.
            let awake = timetable.wave(zones: zones, after: nil, through: .distantFuture).filter
            effect.reached = plan.narrowed(to: awake ?? DeviceQuery.TimeZoneFilter(zones: [], includesUnset: false))
        }
        return effect
    }

    /// The send's target count and the devices its rules leave out or defer, given how many devices the plan's
    /// query matches (`whole`: preferences applied, quiet hours not).
    private func counted(_ plan: SendPlan, whole: Int, quiet: QuietHoursEffect) async throws
        -> (targetCount: Int, suppressed: SuppressedCounts)
    {
        var suppressed = SuppressedCounts()
        if plan.job.quietHours?.mode == .drop {
            suppressed.quietHoursDropped = quiet.count
        } else {
            suppressed.quietHoursDeferred = quiet.count
        }
        if plan.query.preference != nil {
            suppressed.preference = max(0, try await store.count(matching: plan.query.preference(nil)) - whole)
        }
        if plan.query.skipsActivitiesDisabled {
            suppressed.activitiesDisabled = max(
                0, try await store.count(matching: plan.query.includingActivitiesDisabled()) - whole)
        }
        return (whole - suppressed.quietHoursDropped, suppressed)
    }

    /// How many devices a send would reach and how many its rules would leave out or defer, by rule, were it sent at
    /// `date`: what a dry run says before anything is sent. The frequency caps' share is an estimate from the counters
    /// of the moment, since other sends may claim or a window end meanwhile.
    ///
    /// Each device is counted under one rule, as the send counts it: the caps' share is taken among the devices the
    /// send would send to, so a device quiet hours drop is never also counted as capped.
    package func preview(_ plan: SendPlan, at date: Date) async throws -> (targetCount: Int, suppressed: SuppressedCounts) {
        let quiet = try await quietHours(of: plan)
        var (targetCount, suppressed) = try await counted(
            plan, whole: try await store.count(matching: plan.query), quiet: quiet)
        if !plan.job.frequencyCaps.isEmpty {
            suppressed.frequencyCap = try await store.count(
                matching: (quiet.reached ?? plan).query.exhaustingFrequencyCaps(plan.job.frequencyCaps, at: date))
        }
        return (targetCount, suppressed)
    }

    /// How many of the send's target are Web Push subscriptions (before quiet hours and caps), for a dry run.
    package func webSubscriptionCount(of plan: SendPlan) async throws -> Int {
        guard plan.query.tokenKinds?.contains(.webPush) ?? true else { return 0 }
        return try await store.count(matching: plan.query.kinds([.webPush]))
    }

    /// What became of a broadcast.
    package enum Broadcast: Sendable {
        /// Sent: APNs's outcome, and the send recorded whole (`completed`, or `failed` with why).
        case sent(Broadcaster.Outcome, SendRecord)
        /// Waits for its `sendAt`: the send, `queued`.
        case scheduled(SendRecord)
    }

    /// Sends a validated broadcast now, or schedules it for its `sendAt`. Either way it is recorded as a send.
    package func broadcast(_ plan: BroadcastPlan) async throws -> Broadcast {
        if plan.sendAt != nil {
            let record = try await broadcaster.schedule(plan)
            worker.wake()
            return .scheduled(record)
        }
        let (outcome, record) = try await broadcaster.sendNow(plan)
        return .sent(outcome, record)
    }

    /// Cancels a queued or running send: it is never started, or stops at once on this instance (and within its
    /// next status check on another one) without waiting for APNs: what APNs had answered is recorded, the requests
    /// still waiting are cancelled and their devices get no outcome.
    /// - Returns: The send, now `cancelled` (again, if it was already).
    /// - Throws: ``SendError`` `unknownSend`, or `sendFinished` when it had completed or failed; a store error.
    package func cancel(_ id: SendID) async throws -> SendRecord {
        guard let record = try await store.cancelSend(id) else {
            throw SendError(.unknownSend, "There is no send \(id): check the id the send was answered with.")
        }
        guard record.status == .cancelled else {
            throw SendError(
                .sendFinished, "The send \(id) has \(record.status) already: there is nothing left to cancel.")
        }
        worker.cancelled(id)
        return record
    }

    /// Refuses a send to a single token that is not registered, or was removed after APNs rejected it.
    /// - Throws: ``SendError`` `unknownToken`.
    package func checkSingleToken(of plan: SendPlan) async throws {
        if let token = plan.singleToken, try await store.device(token)?.isActive != true {
            throw SendError(
                .unknownToken,
                "The token \(token.redacted) is not registered, or was removed after APNs rejected it: the app must register it first."
            )
        }
    }

    /// The devices of a send small enough to perform while the caller waits (at most ``inlineLimit``), or `nil` for
    /// a background send.
    ///
    /// One read for the common cases (one token, one user): the first page of the target, one device longer than
    /// the limit, says whether it fits.
    private func inlineTargets(of plan: SendPlan) async throws -> [DeviceRegistration]? {
        if plan.singleToken != nil {
            let page = try await store.devices(matching: plan.query, after: nil, limit: 1)
            if page.devices.isEmpty { try await checkSingleToken(of: plan) }
            return inlineLimit >= page.devices.count ? page.devices : nil
        }
        guard inlineLimit > 0 else { return nil }
        var devices: [DeviceRegistration] = []
        var cursor: DeviceCursor?
        repeat {
            let page = try await store.devices(
                matching: plan.query, after: cursor, limit: inlineLimit + 1 - devices.count)
            devices += page.devices
            cursor = page.next
            if devices.count > inlineLimit { return nil }
        } while cursor != nil
        return devices
    }
}
