import DequeModule
package import Foundation
import HeraldAPNS
package import HeraldCore
import Logging
package import HeraldStore

/// Performs one send: walks its target page by page after a checkpoint, keeps devices between "sent" and
/// "recorded" within the permits it holds, and records outcomes in batches as they come, one transaction per batch.
///
/// The permits come from the instance's ``HeraldSending/InFlightBudget``, shared by every send the instance runs, so
/// many sends run side by side within one total; without a budget (tests) a run may have `maximumInFlight`. A run
/// tells the budget what it has in flight and what it could start, and gets or gives back permits accordingly.
///
/// What a crash costs: a device is re-sent after `kill -9` only if it was sent and its outcome not yet recorded, and
/// there are never more of those than the budget's total across the instance — a permit counts a device from the
/// moment it is sent until its outcome is committed, not until APNs answers. A resumed run starts after the send's checkpoint (the
/// last page whose every device is recorded) and skips the devices of later pages that already have an outcome.
/// Each device gets the same `apns-id` on every attempt and every run (``apnsID(send:token:)``), so what is sent
/// twice is recognisable downstream.
///
/// Memory stays bounded whatever the target's size: at most two pages wait to be sent and as many outcomes wait to be
/// recorded as the run holds permits. Runs as one task group: the page fetch, the sends and the recording overlap, and
/// nothing outlives the call: a run that ends early (cancelled, a store error) cancels the requests it still has in
/// flight, and their devices get no outcome.
package struct FanOut: Sendable {
    let store: any Store
    let delivery: Delivery
    let pageSize: Int
    let maximumInFlight: Int
    let clock: any WallClock
    /// What a send with a `rate` waits on between its starts.
    var sleepClock: any Clock<Duration> = ContinuousClock()
    /// The instance's in-flight budget that background sends share; `nil`: each run may have `maximumInFlight`.
    var budget: InFlightBudget?
    /// Each app's push-to-start pace, shared through the store; `nil`: starts are not paced.
    package var pushToStart: PushToStartPacer?
    /// Where the devices a frequency cap leaves out are counted; `nil`: nowhere (tests).
    var metrics: (any SendingMetrics)?

    /// - Parameters:
    ///   - pageSize: Devices fetched per page, and the most outcomes recorded per transaction.
    ///   - maximumInFlight: The most devices one run may have sent and not yet recorded.
    ///   - clock: The time of day: outcomes, lease renewals.
    ///   - sleepClock: What a send with a `rate` waits on between its starts.
    ///   - budget: The instance's shared in-flight budget; `nil`: each run may have `maximumInFlight`.
    package init(
        store: any Store, delivery: Delivery, pageSize: Int, maximumInFlight: Int, clock: any WallClock,
        sleepClock: any Clock<Duration> = ContinuousClock(), budget: InFlightBudget? = nil,
        metrics: (any SendingMetrics)? = nil
    ) {
        self.metrics = metrics
        self.store = store
        self.delivery = delivery
        self.pageSize = pageSize
        self.maximumInFlight = maximumInFlight
        self.clock = clock
        self.sleepClock = sleepClock
        self.budget = budget
    }

    /// A background send's lease, renewed at a third of its duration: the send's, or one shard's when the run is a
    /// shard of a large send (its checkpoint is then the shard's too).
    package struct Lease: Sendable {
        let worker: String
        let duration: Duration
        var shard: Int?

        /// - Parameter shard: The shard the run is, for a shard of a large send; `nil` for a whole send.
        package init(worker: String, duration: Duration, shard: Int? = nil) {
            self.worker = worker
            self.duration = duration
            self.shard = shard
        }

        /// Extends the lease; `false` when the worker no longer holds it.
        func renew(_ id: SendID, until: Date, in store: any Store) async throws -> Bool {
            if let shard { return try await store.renewShardLease(of: id, shard: shard, worker: worker, until: until) }
            return try await store.renewLease(of: id, worker: worker, until: until)
        }
    }

    /// How a run ended.
    package struct Result: Sendable {
        /// Whether every device was sent and recorded; `false` when asked to stop.
        package var finished: Bool
        /// The send's counts, as recorded.
        package var counts: OutcomeCounts
        /// Every outcome, in the order they came, when collecting (inline sends).
        package var outcomes: [ReportedOutcome]
    }

    /// Another worker holds the send now: this one must stop.
    package struct LeaseLost: Error {}

    /// One device of a run on its way to APNs: its page, the device and the notification it gets. The context the
    /// bulk send hands back with the device's answer.
    ///
    /// A class: the push is handed from the run to the sender, its stream and its answer, and a copy of a structure
    /// retains each of the registration's and notification's strings and arrays (a tenth of the fan-out's
    /// retain/release in the profile), where a reference is retained once.
    final class Push: Sendable {
        let page: Int
        let device: DeviceRegistration
        let notification: PreparedNotification
        /// The language of the notification's text, for a web message (``SendPlan/variant(for:)``).
        let language: String?

        init(page: Int, device: DeviceRegistration, notification: PreparedNotification, language: String?) {
            self.page = page
            self.device = device
            self.notification = notification
            self.language = language
        }
    }

    /// The run's sends through ``HeraldAPNS/APNSBulkSend``: the same bulk loop as `herald send --repeat`.
    typealias Bulk = APNSBulkSend<Push, PushResult>

    private enum Event: Sendable {
        case page(DevicePage, done: Set<DeviceToken>)
        /// The sender's answer for a device (an end, or a retry to run in a task).
        case answered(Bulk.Answer)
        /// A device's outcome once a rejection was applied to the registry.
        case delivered(page: Int, ReportedOutcome)
        case recorded(count: Int, OutcomeCounts)
        case failed(any Error)
        /// A send with a `rate` may start its next devices.
        case tick
        /// The shared budget gave the send more permits.
        case permits(Int)
        /// The app's push-to-start pace granted starts (0: its second was spent, and the next one has begun).
        case paced(Int)
        /// The send's requests in flight are to be cancelled (``InFlightCancellation``).
        case cancelInFlight
    }

    /// A send's `rate` as starts granted per tick: one start at a time up to 100 a second, batches at ticks of 10 ms
    /// above, so a high rate costs 100 wake-ups a second, not one per notification.
    struct Pace {
        let grant: Int
        let period: Duration
        /// Outcomes gathered before they are recorded: about a tenth of a second of the rate, so a campaign at 1,000 a
        /// second commits ten times a second rather than once per handful of answers, and leaves the database's
        /// flushes to the sends that wait on them (inline sends). Still bounded by the permits the send holds.
        let recordingBatch: Int
        var allowance: Int
        var ticking = false

        init(rate: Int) {
            recordingBatch = max(1, rate / 10)
            grant = max(1, rate / 100)
            period = .nanoseconds(Int64(1_000_000_000) * Int64(grant) / Int64(rate))
            allowance = grant
        }

        /// Whether the outcomes gathered are to be recorded now: a batch's worth, or the send cannot go on without
        /// recording — the pace allows a start but no permit is free (the outcomes waiting to be recorded hold them),
        /// or nothing is queued to start. Between two ticks a paced send has no permit to spare, and needs none: that
        /// is no reason to record (it made a campaign at 1,000 a second record every 5 outcomes, 200 commits a second).
        func recordingDue(gathered: Int, hasPermit: Bool, queueEmpty: Bool) -> Bool {
            gathered >= recordingBatch || (!hasPermit && allowance > 0) || queueEmpty
        }
    }

    /// Runs the send.
    ///
    /// One loop drives everything from one queue of events: devices go to the sender through an
    /// ``HeraldAPNS/APNSBulkSend`` without a task while it has a free stream (its answers come back through the queue
    /// from the event loop), and only what must wait — a device with no free stream, a retry, a rejection to apply to
    /// the registry, a page fetch, a recording — gets a child task. What to do next is ``FanOutRun``'s to decide (a
    /// value fed with the events, tested without I/O); this loop only carries its decisions out. A device holds one of
    /// the run's permits from its start until its outcome is recorded.
    /// - Parameters:
    ///   - checkpoint: Where a resumed send starts; `nil` from the beginning.
    ///   - resuming: Whether outcomes may be recorded already (after the checkpoint too): their devices are skipped.
    ///   - createdAt: When the send was created: a device the send moved to the other environment (a `BadDeviceToken`
    ///     correction) was pushed to there already, and is skipped when the walk reaches that environment; only
    ///     devices updated since (less ``clockSkewAllowance``: another instance may have moved it) are looked up.
    ///   - lease: The background worker's lease to keep renewing; `nil` for an inline send.
    ///   - collect: Whether to return every outcome (inline sends only: a small target).
    ///   - lane: The send's lane in the shared budget (``budget``).
    ///   - share: Its app's priority and weight in the shared budget.
    ///   - cancellation: Once cancelled, nothing more is fetched or sent, the requests in flight are cancelled, what
    ///     APNs answered is recorded, and the run ends without waiting for APNs; the devices whose requests were
    ///     cancelled get no outcome (a later run would send them again with the same `apns-id`).
    ///   - shouldStop: Checked between events; once `true`, nothing more is fetched or sent, and what is in flight
    ///     is finished and recorded (graceful shutdown). A later run skips what was recorded.
    /// - Throws: ``LeaseLost``, a store error, or `CancellationError`.
    package func run(
        _ plan: SendPlan, send id: SendID, createdAt: Date, after checkpoint: DeviceCursor?, resuming: Bool = false,
        lease: Lease?,
        collect: Bool, lane: SendLane = .background, share: InFlightBudget.AppShare = .init(),
        cancellation: InFlightCancellation? = nil, shouldStop: @escaping @Sendable () -> Bool = { false }
    ) async throws -> Result {
        let events = BatchQueue<Event>()
        let changedSince = createdAt.addingTimeInterval(-Self.clockSkewAllowance)
        cancellation?.whenCancelled { events.push(.cancelInFlight) }
        // The database away (a restart, a failover) pauses the run, never fails it: a page read or a recording waits
        // for its return, the outcomes gathered meanwhile stay in memory — no more than the permits the run holds,
        // since a device holds one until its outcome is recorded — and nothing is sent twice. Given up only when the
        // run's requests are cancelled (a shutdown past its grace, a cancelled send).
        let outageLogger = {
            var logger = delivery.logger
            logger[metadataKey: LogKey.sendID] = "\(id)"
            if let shard = lease?.shard { logger[metadataKey: LogKey.shard] = "\(shard)" }
            return logger
        }()
        let outage = StoreOutage(clock: sleepClock, logger: outageLogger, metrics: metrics)
        let givenUp: @Sendable () -> Bool = { cancellation?.isCancelled ?? false }
        @Sendable func record(_ batch: [DeliveryOutcome], checkpoint: DeviceCursor?) async throws -> OutcomeCounts {
            do {
                return try await outage.retrying("record delivery outcomes", givenUp: givenUp) {
                    if let shard = lease?.shard {
                        return try await store.recordOutcomes(batch, for: id, shard: shard, checkpoint: checkpoint)
                    }
                    return try await store.recordOutcomes(batch, for: id, checkpoint: checkpoint)
                }
            } catch let error as StoreError where error.isTransient {
                outageLogger.error(
                    "Gave up recording outcomes: the database stayed away until the send's requests were cancelled; these devices get the notification again, under the same apns-id, when the send resumes",
                    metadata: [LogKey.count: "\(batch.count)", LogKey.error: "\(error)"])
                throw error
            }
        }
        let flow = budget?.join(app: plan.bundleID, send: id, lane: lane, share: share) {
            events.push(.permits($0))
        }
        defer { if let flow { budget?.leave(flow) } }
        return try await withThrowingDiscardingTaskGroup { group in
            // The sends' own tasks (a device waiting for a stream, a retry), apart from the fetches and recordings: the
            // cancellation of what is in flight cancels them alone.
            try await withThrowingDiscardingTaskGroup { sends in
                let appPace = pushToStart.flatMap { $0.applies(to: plan) ? $0 : nil }
                var run = FanOutRun(
                    FanOutRun.Settings(
                        pageSize: pageSize, maximumInFlight: maximumInFlight, rate: plan.rate,
                        appPaceShare: appPace?.share),
                    after: checkpoint, permits: flow == nil ? maximumInFlight : 0)
                let sender = delivery.sender
                // The permits are the run's (``FanOutRun``): the bulk send only sends, in or out of a task.
                var bulk = Bulk(
                    permits: .max,
                    start: { push, cancellation, answered in
                        // A subscription's push service has no task-free start: it is sent from a task.
                        push.device.registration.webPush == nil
                            && sender.start(
                                push.notification, to: push.device.token, in: push.device.environment,
                                cancellation: cancellation, answered: answered)
                    },
                    send: { push in await delivery.push(push.notification, to: push.device, language: push.language) },
                    answered: { events.push(.answered($0)) })
                // However the run ends (a store error, its task cancelled), no request it wrote keeps a stream.
                defer { bulk.cancelInFlight() }
                var result = Result(finished: false, counts: OutcomeCounts(), outcomes: [])
                var lastRenewal = clock.now()
                func gather(_ outcome: ReportedOutcome, page: Int) {
                    run.gathered(outcome.outcome, page: page)
                    if collect { result.outcomes.append(outcome) }
                }

                while true {
                    if shouldStop() { run.stop() }
                    if let flow, let budget, let demand = run.demand() {
                        run.granted(budget.update(flow, inUse: demand.inUse, wanted: demand.wanted))
                    }
                    while let next = run.nextStart() {
                        let variant = plan.variant(for: next.device)
                        let notification = variant.notification.with(apnsID: Self.apnsID(send: id, token: next.device.token))
                        bulk.start(
                            Push(page: next.page, device: next.device, notification: notification, language: variant.language),
                            in: &sends)
                    }
                    let followUps = run.followUps()
                    if let period = followUps.tick {
                        group.addTask {
                            try? await sleepClock.sleep(for: period)
                            events.push(.tick)
                        }
                    }
                    if let appPace, let wanted = followUps.takeAppPace {
                        group.addTask {
                            do {
                                events.push(
                                    .paced(
                                        try await outage.retrying("take starts from the push-to-start pace", givenUp: givenUp) {
                                            try await appPace.take(wanted, app: plan.bundleID)
                                        }))
                            } catch {
                                events.push(.failed(error))
                            }
                        }
                    }
                    if let after = followUps.fetchAfter {
                        group.addTask {
                            do {
                                let (page, done) = try await outage.retrying("read the next devices", givenUp: givenUp) {
                                    try await fetch(plan, send: id, after: after, resuming: resuming, changedSince: changedSince)
                                }
                                events.push(.page(page, done: done))
                            } catch {
                                events.push(.failed(error))
                            }
                        }
                    }
                    if let recording = followUps.record {
                        group.addTask {
                            do {
                                events.push(
                                    .recorded(
                                        count: recording.outcomes.count,
                                        try await record(recording.outcomes, checkpoint: recording.checkpoint)))
                            } catch {
                                events.push(.failed(error))
                            }
                        }
                    }
                    if let finished = followUps.finished {
                        result.finished = finished
                        break
                    }
                    for event in try await events.take() {
                        switch event {
                        case .page(let page, let done):
                            run.fetched(page, done: done)
                        case .answered(let answer):
                            guard let pushed = bulk.outcome(of: answer, in: &sends) else { break }
                            let push = answer.item
                            if pushed.isCancelled {
                                delivery.countCancelled()
                                bulk.finished(1)
                                run.cancelled()
                            } else if let outcome = delivery.settledAtOnce(pushed, push.device) {
                                gather(outcome, page: push.page)
                            } else {
                                group.addTask {
                                    events.push(
                                        .delivered(
                                            page: push.page,
                                            await delivery.settle(
                                                pushed, push.notification, push.device, send: id, outage: outage,
                                                givenUp: givenUp)))
                                }
                            }
                        case .delivered(let page, let outcome):
                            gather(outcome, page: page)
                        case .recorded(let count, let counts):
                            bulk.finished(count)
                            run.recorded(count: count)
                            result.counts = counts
                        case .failed(let error):
                            throw error
                        case .permits(let count):
                            run.granted(count)
                        case .paced(let granted):
                            run.paced(granted)
                        case .cancelInFlight:
                            run.stop()
                            bulk.cancelInFlight()
                            sends.cancelAll()
                        case .tick:
                            run.ticked()
                        }
                    }
                    if let lease, clock.now() >= lastRenewal.addingTimeInterval(Self.seconds(lease.duration) / 3) {
                        lastRenewal = clock.now()
                        let until = lastRenewal.addingTimeInterval(Self.seconds(lease.duration))
                        do {
                            guard try await lease.renew(id, until: until, in: store) else {
                                throw LeaseLost()
                            }
                        } catch let error as StoreError where error.isTransient {
                            // The database is away: the lease stands until it runs out, and is renewed again in a
                            // second, so that the database's return finds it renewed before another worker can claim.
                            lastRenewal = clock.now().addingTimeInterval(1 - Self.seconds(lease.duration) / 3)
                            metrics?.storeFailed()
                        }
                    }
                }
                // Only a paced send's next tick may still wait: it is not needed.
                group.cancelAll()
                return result
            }
        }
    }

    /// The next page of the send's devices, and those of them that need no send: an outcome already (a resumed run),
    /// moved to the other environment by this send (pushed there), or left out by a frequency cap.
    private func fetch(
        _ plan: SendPlan, send id: SendID, after: DeviceCursor?, resuming: Bool, changedSince: Date
    ) async throws -> (DevicePage, done: Set<DeviceToken>) {
        let page = try await store.devices(matching: plan.query, after: after, limit: pageSize)
        var done = resuming ? try await store.tokensWithOutcomes(of: id, among: page.devices.map(\.token)) : []
        // A device this send moved from the other environment got its push there: only a device changed since the send
        // began can be one.
        let changed = page.devices.filter { $0.updatedAt >= changedSince }.map(\.token)
        if !changed.isEmpty {
            done.formUnion(try await store.tokensCorrected(by: id, among: changed))
        }
        // Left out like devices done before: not sent, and no outcome to wait for. A claim made again after a lost
        // answer counts the send once (the store's claim is per send and person).
        let capped = try await claimFrequencyCaps(
            plan, send: id, devices: page.devices.filter { !done.contains($0.token) }, recordOnSend: true)
        done.formUnion(capped.suppressed.map(\.token))
        return (page, done)
    }

    /// The devices whose person has room in every frequency cap of the send, and those left out: one claim in the store
    /// for the whole batch (``HeraldStore/FrequencyCapStore``), none when the send has no cap.
    /// - Parameter recordOnSend: Whether the store adds those left out to the send's row (a background send's).
    package func claimFrequencyCaps(
        _ plan: SendPlan, send id: SendID, devices: [DeviceRegistration], recordOnSend: Bool
    ) async throws -> (allowed: [DeviceRegistration], suppressed: [DeviceRegistration]) {
        let caps = plan.job.frequencyCaps
        guard !caps.isEmpty, !devices.isEmpty else { return (devices, []) }
        let subjects = devices.map { PreferenceSubject(of: $0.registration).key }
        let claim = try await store.claimFrequencyCaps(
            caps, topic: plan.bundleID, subjects: subjects, send: id, recordOnSend: recordOnSend, at: clock.now())
        var allowed: [DeviceRegistration] = []
        var suppressed: [DeviceRegistration] = []
        for (device, subject) in zip(devices, subjects) {
            if claim.allowed.contains(subject) { allowed.append(device) } else { suppressed.append(device) }
        }
        if recordOnSend, !suppressed.isEmpty { metrics?.suppressed(SuppressedCounts(frequencyCap: suppressed.count)) }
        return (allowed, suppressed)
    }

    /// Sends to a few devices at once (an inline send) and returns their outcomes as they came; records nothing.
    package func deliver(_ plan: SendPlan, send id: SendID, to devices: [DeviceRegistration]) async -> [ReportedOutcome] {
        func prepared(for device: DeviceRegistration) -> (notification: PreparedNotification, language: String?) {
            let variant = plan.variant(for: device)
            return (variant.notification.with(apnsID: Self.apnsID(send: id, token: device.token)), variant.language)
        }
        if devices.count == 1 {
            let (notification, language) = prepared(for: devices[0])
            return [await delivery.deliver(notification, to: devices[0], language: language)]
        }
        return await withTaskGroup { group in
            for device in devices {
                let (notification, language) = prepared(for: device)
                group.addTask { await delivery.deliver(notification, to: device, language: language) }
            }
            var outcomes: [ReportedOutcome] = []
            outcomes.reserveCapacity(devices.count)
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
    }

    /// The `apns-id` of one send to one device: the name-based (version 5) UUID of the token's hex in the send id's
    /// namespace, the same on every attempt, after every restart and on every instance. Anyone can compute it
    /// (`uuid.uuid5(uuid.UUID(send_id), token_hex)` in Python) to match APNs's or a device's logs to a send.
    package static func apnsID(send: SendID, token: DeviceToken) -> APNSID {
        // The store derives it too: an accepted outcome under this id is stored without it.
        APNSID.derived(send: send, token: token)
    }

    /// How far the clocks of two instances may disagree, for the look-up of devices a send moved to the other
    /// environment: the move is timed by the instance that made it.
    static let clockSkewAllowance: TimeInterval = 300

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
