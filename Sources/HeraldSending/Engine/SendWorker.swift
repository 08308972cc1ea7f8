import Foundation
public import HeraldCore
public import HeraldStore
public import Logging
public import ServiceLifecycle
import Synchronization

/// Runs background sends: claims queued sends (or ones whose worker's lease ran out), performs each with a lease it
/// keeps renewing, and marks it completed or failed.
///
/// Many sends run at once (docs/sending.md, "Many sends at once"). Each lane (``HeraldStore/SendLane``) has
/// its own running limit (`HERALD_RUNNING_SENDS` per lane), so a campaign never holds the slot of a Live Activity
/// update or of a send to one user; the worker claims from every lane that has room whenever a send is queued or
/// ends, and at each poll. The sends share the instance's in-flight budget (``HeraldSending/InFlightBudget``):
/// earlier lanes first, then apps by weight, then sends evenly.
///
/// A send cancelled while this worker performs it (`DELETE /api/sends/{id}`) stops: at once when the cancellation came
/// through this instance (``cancelled(_:)``), and otherwise at the worker's next look at the send's status (every poll
/// interval). The worker stops sending, cancels the requests waiting for APNs (``InFlightCancellation``), records what
/// APNs had answered, and lets go of the send, which stays cancelled and is never claimed again. A device whose
/// request was cancelled has no outcome: APNs may or may not have received it.
///
/// Several instances on one PostgreSQL database share the queue: a claim gives a send to one worker, and a worker that
/// dies loses its lease, so another instance resumes the send once the lease runs out (docs/reliability.md). A worker
/// is named after its instance id (`instance/pid/random`) and holds its instance's lock for its whole run
/// (``HeraldStore/DeliveryStore/withInstanceLock(_:_:)``): once it has the lock, no earlier run of the same instance
/// can be alive, so it puts back the sends that run held and resumes them at once. When another process holds the
/// lock (two servers with one instance id), it says so and leaves those sends to their leases, trying the lock again
/// at each poll. On SQLite the database is this server's alone, so every send an earlier run held is put back. On
/// graceful shutdown the worker stops sending, records what APNs answers of what is in flight — cancelling the requests
/// still unanswered after ``SendingSettings/shutdownGrace`` — and puts the send back in the queue, so the next start
/// resumes it at once. A resumed send skips the devices already recorded.
public final class SendWorker: Service, Sendable {
    private let store: any Store
    /// The apps this server has APNs credentials for: a send of another app fails instead of running.
    private let servedApps: Set<String>
    /// Reads the version-1 jobs older servers stored.
    private let legacyJobs: any LegacyJobReader
    private let fanOut: FanOut
    private let broadcaster: Broadcaster
    private let leaseDuration: Duration
    private let pollInterval: Duration
    private let catchUpLimit: TimeInterval
    private let shutdownGrace: Duration
    private let clock: any Clock<Duration>
    private let wallClock: any WallClock
    private let logger: Logger
    /// The instance id this worker runs under (`HERALD_INSTANCE_ID`).
    public let instance: String
    /// The name this worker claims sends under: instance id, process and a random suffix.
    public let name: String
    private let wakeup = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    private let waiters = Mutex<[UUID: WakeSignal]>([:])
    private let polls = Mutex(Polls())
    private let storeReady: Gate
    /// The most sends running at once in each lane.
    private let runningLimit: Int
    /// Each app's priority and weight in the shared budget.
    private let appShares: [String: InFlightBudget.AppShare]
    /// The order in which waiting sends of a lane are claimed: by their app's priority, then oldest first.
    private let precedence: ClaimPrecedence
    /// The runs being performed (a whole send, or one shard of a large send), with their lane and whether their send
    /// was cancelled meanwhile.
    private let running = Mutex<[RunKey: RunningSend]>([:])
    private let metrics: (any SendingMetrics)?
    /// Sends to more devices than this are cut into shards of this size; 0: never.
    private let shardSize: Int

    /// The most shards of one send this worker runs at once (``SendingSettings/shardRunsPerSend``).
    private let shardRunsPerSend: Int

    /// One run: a whole send, or one of its shards.
    private struct RunKey: Hashable {
        let send: SendID
        let shard: Int?
    }

    private struct RunningSend {
        let lane: SendLane
        var cancelled = false
        /// Cancels the run's requests in flight when its send is cancelled.
        let inFlight = InFlightCancellation()
    }

    /// What a look at the queue gave the worker.
    private enum Claim {
        case send(SendRecord)
        case shard(SendRecord, SendShard)

        var key: RunKey {
            switch self {
            case .send(let record): RunKey(send: record.id, shard: nil)
            case .shard(let record, let shard): RunKey(send: record.id, shard: shard.index)
            }
        }
    }

    /// - Parameters:
    ///   - servedApps: The bundle ids of the apps this server sends for.
    ///   - legacyJobs: Reads the jobs older servers stored as request bodies.
    ///   - instance: The instance id (`HERALD_INSTANCE_ID`).
    ///   - clock: What the worker sleeps on between polls.
    ///   - wallClock: The time of day: leases, schedules.
    ///   - storeReady: Opens once the store is migrated: the worker waits for it.
    ///   - appShares: Each app's priority and weight, in the queue and the shared in-flight budget (`normal` and 1
    ///     when absent).
    public init(
        store: any Store, servedApps: Set<String>, legacyJobs: any LegacyJobReader, fanOut: FanOut,
        broadcaster: Broadcaster, sending: SendingSettings, instance: String,
        clock: any Clock<Duration>, wallClock: any WallClock, storeReady: Gate, logger: Logger,
        appShares: [String: InFlightBudget.AppShare] = [:], metrics: (any SendingMetrics)? = nil
    ) {
        self.storeReady = storeReady
        self.runningLimit = sending.runningSendsPerLane
        self.shardSize = sending.shardSize
        self.shardRunsPerSend = max(1, sending.shardRunsPerSend)
        self.appShares = appShares
        precedence = ClaimPrecedence(priorities: appShares.mapValues(\.priority))
        self.metrics = metrics
        self.store = store
        self.servedApps = servedApps
        self.legacyJobs = legacyJobs
        self.fanOut = fanOut
        self.broadcaster = broadcaster
        self.leaseDuration = sending.leaseDuration
        self.pollInterval = sending.pollInterval
        self.catchUpLimit = FanOut.seconds(sending.catchUpLimit)
        self.shutdownGrace = sending.shutdownGrace
        self.clock = clock
        self.wallClock = wallClock
        self.logger = logger
        self.instance = instance
        name = "\(instance)/\(ProcessInfo.processInfo.processIdentifier)/\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Claims and performs queued sends until graceful shutdown or cancellation, holding the instance's lock.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await storeReady.wait()
            await withDiscardingTaskGroup { group in
                group.addTask { await self.hearOtherInstances() }
                defer { group.cancelAll() }
                do {
                    try await store.withInstanceLock(instance) { lock in await self.work(lock) }
                } catch {
                    // `work` throws nothing: the store could not give a connection for the lock.
                    guard !stopping.load(ordering: .relaxed), !Task.isCancelled else { return }
                    logger.warning(
                        "Cannot take the lock of this instance: sends an earlier run left behind resume when their leases run out",
                        metadata: [LogKey.error: "\(error)"])
                    await work(nil)
                }
            }
        } onGracefulShutdown: {
            self.stopping.store(true, ordering: .relaxed)
            self.wakeup.signal()
        }
    }

    /// Wakes this worker each time another instance queues a send, cuts one into shards or puts one back
    /// (``HeraldStore/DeliveryStore/watchForWork(_:)``), until cancelled, so that it starts on them at once rather than
    /// at its next poll. A lost connection is watched again after a poll interval; the look it wakes finds what came
    /// meanwhile.
    private func hearOtherInstances() async {
        while !Task.isCancelled {
            do {
                try await store.watchForWork { [wakeup] in wakeup.signal() }
                return
            } catch {
                guard !Task.isCancelled else { return }
                logger.notice(
                    "Not hearing of other instances' sends for now: this worker finds them at its polls",
                    metadata: [LogKey.error: "\(error)"])
                guard (try? await clock.sleep(for: pollInterval)) != nil else { return }
                wakeup.signal()
            }
        }
    }

    private func work(_ lock: InstanceLock?) async {
        await withDiscardingTaskGroup { group in
            var resumedAbandoned = lock == nil
            var reportedLockHeldElsewhere = false
            while !stopping.load(ordering: .relaxed), !Task.isCancelled {
                if let lock, !resumedAbandoned {
                    resumedAbandoned = await resumeAbandoned(lock, reported: &reportedLockHeldElsewhere)
                }
                let poll = polls.withLock { polls -> Int in
                    polls.started += 1
                    return polls.started
                }
                let runningAtStart = !running.withLock { $0.isEmpty }
                var claimed = false
                while !stopping.load(ordering: .relaxed), let claim = await claimNext() {
                    claimed = true
                    group.addTask {
                        switch claim {
                        case .send(let record): await self.perform(record)
                        case .shard(let record, let shard): await self.performShard(shard, of: record)
                        }
                        self.running.withLock { _ = $0.removeValue(forKey: claim.key) }
                        self.metrics?.sendsRunning(self.runningPerLane())
                        self.notifyWaiters()
                        // A slot is free: the next send of its lane may start now, not at the next poll.
                        self.wakeup.signal()
                    }
                }
                if claimed { continue }
                await reportWaiting()
                // A send that ended during this look may have put itself back in the queue, due now (the next wave of
                // a localTime send) after `claimNext` looked: only a look that began with none running says the worker
                // is idle. The ended send's wake-up makes the worker look again at once.
                let sendsRunning = runningAtStart || !running.withLock { $0.isEmpty }
                let (idle, lookAgain) = polls.withLock { polls in
                    let waking = polls.idleWaiters.filter {
                        $0.value.after < poll && !(sendsRunning && $0.value.untilSendsEnd)
                    }
                    for key in waking.keys { polls.idleWaiters.removeValue(forKey: key) }
                    // Another look only for a waiter this one could not satisfy (it came during this look): a look
                    // more after satisfying them all could take a send they store next and rely on staying queued.
                    let lookAgain = polls.lookAgain && !polls.idleWaiters.isEmpty
                    polls.lookAgain = false
                    polls.waiting = !lookAgain
                    return (waking.values.map(\.signal), lookAgain)
                }
                for signal in idle { signal.signal() }
                notifyWaiters()
                guard !lookAgain else { continue }
                await wakeup.wait(timeout: await untilNextLook(), clock: clock)
                polls.withLock { $0.waiting = false }
            }
            // Graceful shutdown: every running send sees `stopping`, records what APNs answers of what it has in
            // flight and goes back to the queue; the group waits for them, and cancels what APNs leaves unanswered.
            if stopping.load(ordering: .relaxed), !Task.isCancelled {
                group.addTask { await self.cancelInFlight(after: self.shutdownGrace) }
            }
        }
    }

    /// Cancels the running sends' requests in flight once `grace` has passed, unless every run ended before.
    private func cancelInFlight(after grace: Duration) async {
        await withTaskGroup(of: Bool.self) { timer in
            timer.addTask { (try? await self.clock.sleep(for: grace)) != nil }
            timer.addTask {
                _ = try? await self.waitFor { self.running.withLock { $0.isEmpty } ? true : nil }
                return false
            }
            let expired = await timer.next() ?? false
            timer.cancelAll()
            guard expired else { return }
            let runs = running.withLock { $0.values.map(\.inFlight) }
            if !runs.isEmpty {
                logger.notice(
                    "APNs left requests unanswered past the shutdown grace: cancelled; their devices are sent again when the sends resume",
                    metadata: [LogKey.count: "\(runs.count)"])
            }
            for run in runs { run.cancel() }
        }
    }

    /// Claims, in the lanes that have room, a waiting shard of a sharded send (those started first), else the oldest
    /// waiting send, and counts it as running; `nil` when none waits there (or every lane is full).
    private func claimNext() async -> Claim? {
        let (lanes, full, runningSends) = running.withLock { running in
            let lanes = SendLane.priorityOrder.filter { lane in running.values.count { $0.lane == lane } < runningLimit }
            var shardRuns: [SendID: Int] = [:]
            for key in running.keys where key.shard != nil { shardRuns[key.send, default: 0] += 1 }
            let sends = Set(running.keys.filter { $0.shard == nil }.map(\.send))
            return (Set(lanes), Set(shardRuns.filter { $0.value >= shardRunsPerSend }.keys), sends)
        }
        guard !lanes.isEmpty else { return nil }
        do {
            var claim: Claim?
            if let (record, shard) = try await store.claimShard(
                worker: name, leaseUntil: leaseEnd(), lanes: lanes, excluding: full, precedence: precedence)
            {
                claim = .shard(record, shard)
                metrics?.sendClaimed(
                    lane: record.lane, shard: true, resumed: shard.recorded > 0 || shard.checkpoint != nil)
            } else if let record = try await store.claimNextQueuedSend(
                // Not a send this worker runs: its lease looks run out when the wall clock jumped past it, and a
                // second run under the same name would reschedule it too (a wave sent twice). A send its run put back
                // in the queue is claimed at the look its end wakes.
                worker: name, leaseUntil: leaseEnd(), lanes: lanes, excluding: runningSends, precedence: precedence)
            {
                claim = .send(record)
                metrics?.sendClaimed(
                    lane: record.lane, shard: false, resumed: record.counts.total > 0 || record.checkpoint != nil)
            }
            guard let claim else { return nil }
            let lane = switch claim {
            case .send(let record), .shard(let record, _): record.lane
            }
            running.withLock { $0[claim.key] = RunningSend(lane: lane) }
            metrics?.sendsRunning(runningPerLane())
            return claim
        } catch {
            metrics?.storeFailed()
            logger.warning("Cannot look for queued sends", metadata: [LogKey.error: "\(error)"])
            return nil
        }
    }

    /// The sends running now, per lane.
    public func runningPerLane() -> [SendLane: Int] {
        running.withLock { running in
            var counts: [SendLane: Int] = [:]
            for send in running.values { counts[send.lane, default: 0] += 1 }
            return counts
        }
    }

    /// Publishes how many sends wait in each lane (for `/metrics`).
    private func reportWaiting() async {
        guard let metrics else { return }
        do {
            metrics.sendsWaiting(try await store.waitingSends(), at: wallClock.now())
        } catch {
            metrics.storeFailed()
        }
    }

    /// How long an idle worker waits: its poll interval, or less when a scheduled send comes due sooner.
    private func untilNextLook() async -> Duration {
        let now = wallClock.now()
        guard let next = try? await store.nextSendAt(after: now) else { return pollInterval }
        let wait = Duration.milliseconds(Int64((next.timeIntervalSince(now) * 1000).rounded(.up)))
        return min(pollInterval, wait)
    }

    /// Takes the instance's lock if it can, and then puts back the sends an earlier run of this instance held.
    /// - Returns: Whether that is done; if not, the next poll tries again.
    private func resumeAbandoned(_ lock: InstanceLock, reported: inout Bool) async -> Bool {
        do {
            guard try await lock.acquire() else {
                if !reported {
                    reported = true
                    logger.warning(
                        "Another process holds the lock of instance \(instance): give each server its own HERALD_INSTANCE_ID. Until this one gets the lock, sends an earlier run left behind resume when their leases run out"
                    )
                }
                return false
            }
            let abandoned = try await store.requeueAbandonedSends(of: lock, keeping: name)
            if !abandoned.isEmpty {
                logger.notice(
                    "Resuming the sends an earlier run of this instance left behind",
                    metadata: [LogKey.count: "\(abandoned.count)"])
            }
            return true
        } catch {
            logger.warning("Cannot look for sends an earlier run left behind", metadata: [LogKey.error: "\(error)"])
            return false
        }
    }

    /// Tells the worker a send was queued, so it does not wait for its next poll.
    public func wake() { wakeup.signal() }

    /// Tells the worker a send was cancelled through this instance: if it is performing that send, it stops at its
    /// next event instead of at its next status check.
    public func cancelled(_ id: SendID) {
        let runs = running.withLock { running in
            for key in running.keys where key.send == id { running[key]?.cancelled = true }
            return running.filter { $0.key.send == id }.map(\.value.inFlight)
        }
        for run in runs { run.cancel() }
    }

    /// What cancels a run's requests in flight; `nil` once the run ended.
    private func inFlightCancellation(of send: SendID, shard: Int?) -> InFlightCancellation? {
        running.withLock { $0[RunKey(send: send, shard: shard)]?.inFlight }
    }

    private func isCancelled(_ id: SendID) -> Bool {
        running.withLock { running in running.contains { $0.key.send == id && $0.value.cancelled } }
    }

    /// Waits until a send is completed, failed or cancelled, and returns it; a send cancelled while this worker
    /// performed it, once the worker has recorded what it had in flight and let go of it.
    ///
    /// For tests and tools: wakes whenever this worker finishes a send, and re-reads the record. A read that fails
    /// while the database is away (a transient store error) is tried again after a moment, as the send itself waits.
    /// - Throws: ``HeraldStore/StoreError`` `.notFound` for an unknown send, or a permanent one; `CancellationError`.
    public func waitUntilFinished(_ id: SendID) async throws -> SendRecord {
        try await waitFor { [store, name] in
            guard let record = try await store.send(id) else {
                throw StoreError(.notFound, "There is no send \(id).")
            }
            return record.status.isFinal && record.worker != name ? record : nil
        }
    }

    /// How long ``waitUntilFinished(_:)`` waits before it reads again after a transient store error.
    static let retryAfterStoreError: Duration = .milliseconds(200)

    /// Re-evaluates `condition` whenever the worker finishes a send or goes idle, until it gives a value.
    private func waitFor<T: Sendable>(_ condition: @Sendable () async throws -> T?) async throws -> T {
        let signal = WakeSignal()
        let key = UUID()
        waiters.withLock { $0[key] = signal }
        defer { _ = waiters.withLock { $0.removeValue(forKey: key) } }
        while true {
            do {
                if let value = try await condition() { return value }
            } catch let error as StoreError where error.isTransient {
                // The send may have finished meanwhile, and no wake-up would come again.
                try await clock.sleep(for: Self.retryAfterStoreError)
                continue
            }
            await signal.wait()
            try Task.checkCancellation()
        }
    }

    /// Returns once the worker has looked for queued sends and found none, in a look that began after this call with
    /// no send running (so it saw whatever the sends it ran put back in the queue), and waits for a wake-up
    /// (``wake()``) or its next poll: for tests that must know what a worker did, or did not take, or that store a
    /// send it must not take yet.
    public func waitUntilIdle() async {
        await waitForLook(untilSendsEnd: true)
    }

    /// Returns once the worker has looked for queued sends and found none (or no room in their lanes), in a look that
    /// began after this call, whatever it still runs: for tests that must know a send was left waiting.
    public func waitUntilLookedAgain() async {
        await waitForLook(untilSendsEnd: false)
    }

    private func waitForLook(untilSendsEnd: Bool) async {
        let signal = WakeSignal()
        let key = UUID()
        // A waiting worker is woken; one that is looking now looks once more when this look finds nothing. A wake-up
        // signal left pending instead would make the worker look again later, after the caller relied on its idling.
        let waiting = polls.withLock { polls in
            polls.idleWaiters[key] = (after: polls.started, untilSendsEnd: untilSendsEnd, signal: signal)
            if !polls.waiting { polls.lookAgain = true }
            return polls.waiting
        }
        defer { _ = polls.withLock { $0.idleWaiters.removeValue(forKey: key) } }
        if waiting { wakeup.signal() }
        await signal.wait()
    }

    /// Looks for queued sends, counted, and who waits for one that finds nothing.
    private struct Polls {
        var started = 0
        /// Whether the worker found nothing and waits for a wake-up or its next poll.
        var waiting = false
        /// Whether the worker looks again as soon as its current look finds nothing.
        var lookAgain = false
        var idleWaiters: [UUID: (after: Int, untilSendsEnd: Bool, signal: WakeSignal)] = [:]
    }

    private func notifyWaiters() {
        for signal in waiters.withLock({ Array($0.values) }) { signal.signal() }
    }

    private func leaseEnd() -> Date {
        wallClock.now().addingTimeInterval(FanOut.seconds(leaseDuration))
    }

    private func perform(_ record: SendRecord) async {
        var logger = logger
        logger[metadataKey: LogKey.sendID] = "\(record.id)"
        logger[metadataKey: LogKey.lane] = "\(record.lane)"
        do {
            guard var plan = try await plan(of: record, logger: logger) else { return }
            // A scheduled send, or wave, that no server performed in time: sent late within the catch-up limit,
            // skipped beyond it (a greeting a day late is worse than none).
            let due = record.sendAt ?? record.createdAt
            let lateness = wallClock.now().timeIntervalSince(due)
            let late = plan.schedule != nil && lateness > catchUpLimit
            var wave: SendSchedule.Wave?
            let timetable = plan.timetable
            if timetable.hasWaves {
                let zones = try await store.timeZones(matching: plan.query)
                let current = timetable.wave(zones: zones, after: record.sentThrough, through: due)
                wave = current
                if let filter = current.filter, !late {
                    plan = plan.narrowed(to: filter)
                } else {
                    if late, let filter = current.filter {
                        let skipped =
                            filter.zones.sorted() + (filter.includesUnset ? ["(devices without one)"] : [])
                            + filter.ownQuietHours.sorted().map(\.key)
                        logger.warning(
                            "Skipped a wave of a localTime send that came due while no server ran",
                            metadata: [LogKey.count: "\(skipped.count)"])
                        _ = try await store.updateSend(
                            record.id,
                            SendUpdate(
                                message:
                                    "Skipped the time zones \(skipped.joined(separator: ", ")): their \(RFC3339.string(due)) passed more than the catch-up limit before a server ran."
                            ))
                    }
                    try await finishWave(record, current, through: due, logger: logger)
                    return
                }
            } else if late {
                logger.warning("Skipped a scheduled send that came due while no server ran")
                _ = try await store.updateSend(
                    record.id, SendUpdate(status: .failed, message: Self.missed(due, now: due.addingTimeInterval(lateness))))
                return
            }
            // A send of one wave (quiet hours dropped some zones, or none was quiet) may be cut like any other: each
            // shard's run narrows itself to the same zones.
            let oneWave = wave.map { $0.next == nil && record.sentThrough == nil } ?? true
            if oneWave, try await cutIntoShards(record, plan, logger: logger) { return }
            logger.info(
                record.counts.total == 0
                    ? "Starting a background send"
                    : "Resuming a background send: skipping the devices already recorded",
                metadata: [LogKey.count: "\(record.targetCount ?? -1)"])
            let result = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.watchForCancellation(of: record.id) }
                let result = try await fanOut.run(
                    plan, send: record.id, createdAt: record.createdAt, after: record.checkpoint,
                    resuming: record.counts.total > 0 || record.sentThrough != nil,
                    lease: FanOut.Lease(worker: name, duration: leaseDuration), collect: false, lane: record.lane,
                    share: appShares[plan.bundleID] ?? .init(),
                    cancellation: inFlightCancellation(of: record.id, shard: nil),
                    shouldStop: { self.stopping.load(ordering: .relaxed) || self.isCancelled(record.id) })
                group.cancelAll()
                return result
            }
            if isCancelled(record.id) {
                // The store keeps the send cancelled whatever the status asked; this releases the lease.
                _ = try await store.updateSend(record.id, SendUpdate(status: .cancelled))
                logger.notice(
                    "Stopped a cancelled background send; what APNs had answered is recorded",
                    metadata: [LogKey.count: "\(result.counts)"])
            } else if result.finished, let wave {
                logger.info("Sent a wave of a send", metadata: [LogKey.count: "\(result.counts)"])
                try await finishWave(record, wave, through: due, logger: logger)
            } else if result.finished {
                _ = try await store.updateSend(record.id, SendUpdate(status: .completed))
                logger.info("Finished a background send", metadata: [LogKey.count: "\(result.counts)"])
            } else {
                _ = try await store.updateSend(
                    record.id, SendUpdate(status: .queued, message: "Paused by a shutdown; resumes at the next start."))
                logger.notice("Paused a background send for shutdown")
            }
        } catch is FanOut.LeaseLost {
            logger.warning("Another worker took over a send whose lease ran out; stopping here")
        } catch is CancellationError {
            logger.notice(
                "A background send was cancelled; it resumes when this instance starts again or its lease runs out")
        } catch let error as StoreError where error.isTransient {
            // The database was away at a step that is not retried in place: the send goes back in the queue, and its
            // next run skips what was recorded.
            logger.warning(
                "A background send paused: the database is away; it resumes after its checkpoint once it is back",
                metadata: [LogKey.error: "\(error)"])
            try? await outage(logger).retrying("put a send back in the queue", givenUp: { self.stopping.load(ordering: .relaxed) }) {
                _ = try await self.store.updateSend(record.id, SendUpdate(status: .queued))
            }
            wakeup.signal()
        } catch {
            logger.error("A background send failed", metadata: [LogKey.error: "\(error)"])
            _ = try? await store.updateSend(record.id, SendUpdate(status: .failed, message: "\(error)"))
        }
    }

    /// Waits out the database's transient faults for this worker's steps (``StoreOutage``).
    private func outage(_ logger: Logger) -> StoreOutage {
        StoreOutage(clock: clock, logger: logger, metrics: metrics)
    }

    /// Cuts a fresh send of more than the shard size into shards any worker of any instance can claim, and lets go of
    /// it. Paced sends (their rate, not an instance, bounds them), sends of several waves (at each device's local
    /// time, or deferred past quiet hours) and lists of tokens run whole.
    /// - Returns: Whether the send was cut (or taken over meanwhile): this run is done with it either way.
    private func cutIntoShards(_ record: SendRecord, _ plan: SendPlan, logger: Logger) async throws -> Bool {
        guard shardSize > 0, plan.rate == nil, let count = record.targetCount, count > shardSize,
            record.counts.total == 0, record.checkpoint == nil, record.shardCount == nil
        else { return false }
        if case .tokens = plan.query.selector { return false }
        let boundaries = try await store.shardBoundaries(
            matching: plan.query, size: shardSize, limit: Self.maximumShards - 1)
        guard !boundaries.isEmpty else { return false }
        guard
            try await store.shardSend(
                record.id, worker: name, boundaries: boundaries, size: shardSize, targetCount: count)
        else {
            logger.warning("Another worker took over a send whose lease ran out; stopping here")
            return true
        }
        logger.info(
            "Cut a background send into shards that any instance may run",
            metadata: [LogKey.count: "\(boundaries.count + 1)", LogKey.shardSize: "\(shardSize)"])
        wakeup.signal()
        return true
    }

    /// The most shards a send is cut into; a larger send has larger shards at the end.
    static let maximumShards = 10_000

    /// Runs one shard of a large send: its range of the target, with its own lease and checkpoint. The run that ends
    /// the send's last shard completes the send.
    private func performShard(_ shard: SendShard, of record: SendRecord) async {
        var logger = logger
        logger[metadataKey: LogKey.sendID] = "\(record.id)"
        logger[metadataKey: LogKey.lane] = "\(record.lane)"
        logger[metadataKey: LogKey.shard] = "\(shard.index)"
        let key = (id: record.id, shard: shard.index)
        do {
            guard var plan = try await plan(of: record, logger: logger) else { return }
            let timetable = plan.timetable
            if timetable.hasWaves {
                // Only a send of one wave is cut into shards: the zones its first wave reaches, among the shard's
                // devices (those of the whole target cost a pass over every device per shard).
                let zones = try await store.timeZones(matching: plan.query.after(shard.after).through(shard.through))
                let wave = timetable.wave(zones: zones, after: nil, through: record.sendAt ?? record.createdAt)
                plan = plan.narrowed(to: wave.filter ?? DeviceQuery.TimeZoneFilter(zones: [], includesUnset: false))
            }
            logger.debug(shard.recorded == 0 ? "Starting a shard" : "Resuming a shard after its checkpoint")
            let result = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.watchForCancellation(of: record.id) }
                let result = try await fanOut.run(
                    plan.bounded(through: shard.through), send: record.id, createdAt: record.createdAt,
                    after: shard.resumesAfter,
                    resuming: shard.recorded > 0 || shard.checkpoint != nil,
                    lease: FanOut.Lease(worker: name, duration: leaseDuration, shard: shard.index), collect: false,
                    lane: record.lane, share: appShares[plan.bundleID] ?? .init(),
                    cancellation: inFlightCancellation(of: record.id, shard: shard.index),
                    shouldStop: { self.stopping.load(ordering: .relaxed) || self.isCancelled(record.id) })
                group.cancelAll()
                return result
            }
            if result.finished, !isCancelled(record.id) {
                if let completed = try await store.endShardRun(
                    of: key.id, shard: key.shard, worker: name, status: .done)
                {
                    logger.info("Finished a sharded background send", metadata: [LogKey.count: "\(completed.counts)"])
                }
            } else {
                // Cancelled (never claimed again) or paused by a shutdown (resumed after its checkpoint).
                _ = try await store.endShardRun(of: key.id, shard: key.shard, worker: name, status: .queued)
                logger.notice("Stopped a shard; what APNs had answered is recorded")
            }
        } catch is FanOut.LeaseLost {
            logger.warning("Another worker took over a shard whose lease ran out; stopping here")
        } catch is CancellationError {
            logger.notice("A shard's run was cancelled; it resumes when its lease runs out")
        } catch let error as StoreError where error.isTransient {
            logger.warning(
                "A shard paused: the database is away; it resumes after its checkpoint once it is back",
                metadata: [LogKey.error: "\(error)"])
            try? await outage(logger).retrying("put a shard back in the queue", givenUp: { self.stopping.load(ordering: .relaxed) }) {
                _ = try await self.store.endShardRun(of: key.id, shard: key.shard, worker: self.name, status: .queued)
            }
            wakeup.signal()
        } catch {
            logger.error("A shard of a background send failed", metadata: [LogKey.error: "\(error)"])
            _ = try? await store.updateSend(record.id, SendUpdate(status: .failed, message: "\(error)"))
        }
    }

    /// The send a worker claimed, as its stored job says; `nil` when there is nothing to send this way: the job is
    /// a broadcast (sent here), or the send cannot run and is marked failed with why.
    ///
    /// A version-2 job runs as it was accepted. A version-1 job (the request body, stored by an older server) is
    /// validated again against the current configuration (``LegacyJobReader``).
    private func plan(of record: SendRecord, logger: Logger) async throws -> SendPlan? {
        guard let text = record.job else {
            _ = try await store.updateSend(
                record.id, SendUpdate(status: .failed, message: "The send has no stored job: nothing was sent."))
            return nil
        }
        let stored: StoredJob
        do throws(SendJobError) {
            switch try StoredJob(jsonText: text, sendID: record.id) {
            case .requestBody(let body):
                stored = try await legacyJobs.job(fromRequestBody: body, sendID: record.id, at: wallClock.now())
                if case .requestBody = stored {
                    throw SendJobError.unreadable("it is a request body the server cannot read", sendID: record.id)
                }
            case let job:
                stored = job
            }
        } catch {
            logger.error("A queued send's stored job cannot be run", metadata: [LogKey.error: "\(error.message)"])
            _ = try await store.updateSend(record.id, SendUpdate(status: .failed, message: error.message))
            return nil
        }
        switch stored {
        case .send(let job):
            guard servedApps.contains(job.bundleID) else {
                logger.error(
                    "A queued send's app is no longer configured", metadata: [LogKey.topic: "\(job.bundleID)"])
                _ = try await store.updateSend(
                    record.id,
                    SendUpdate(
                        status: .failed,
                        message:
                            "This server no longer serves \(job.bundleID) (it has no APNs credentials for it), so the send stopped: nothing more was sent. Configure the app again, then send again what is missing."
                    ))
                return nil
            }
            return SendPlan(job: job, sendID: record.id, at: wallClock.now())
        case .broadcast(let job):
            try await performBroadcast(record, job: job, logger: logger)
            return nil
        case .requestBody:
            return nil
        }
    }

    /// A scheduled broadcast: one request, sent unless it came due beyond the catch-up limit while no server ran.
    private func performBroadcast(_ record: SendRecord, job: BroadcastJob, logger: Logger) async throws {
        let due = record.sendAt ?? record.createdAt
        let now = wallClock.now()
        guard now.timeIntervalSince(due) <= catchUpLimit else {
            logger.warning("Skipped a scheduled broadcast that came due while no server ran")
            _ = try await store.updateSend(record.id, SendUpdate(status: .failed, message: Self.missed(due, now: now)))
            return
        }
        try await broadcaster.perform(record, job: job, at: now, logger: logger)
    }

    /// Why a scheduled send that no server performed in time was skipped.
    private static func missed(_ due: Date, now: Date) -> String {
        "Missed its time: due at \(RFC3339.string(due)), and no server ran until \(Int(now.timeIntervalSince(due) / 60)) minutes later, beyond the catch-up limit (HERALD_SCHEDULE_CATCH_UP). Nothing was sent."
    }

    /// After a wave of a `localTime` send: back to the queue until the next one, or completed after the last.
    private func finishWave(_ record: SendRecord, _ wave: SendSchedule.Wave, through: Date, logger: Logger)
        async throws
    {
        if let next = wave.next {
            guard try await store.rescheduleSend(record.id, worker: name, sendAt: next, sentThrough: through) else {
                logger.notice("A localTime send was cancelled or taken over during its wave")
                return
            }
            logger.info("A localTime send waits for its next wave", metadata: ["next": "\(RFC3339.string(next))"])
        } else {
            _ = try await store.updateSend(record.id, SendUpdate(status: .completed))
            logger.info("Finished a localTime send")
        }
    }

    /// Re-reads the send's status every poll interval until it is cancelled (by another instance, or through this
    /// one before ``cancelled(_:)`` could see the send), then marks it so; ends when its task is cancelled.
    private func watchForCancellation(of id: SendID) async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: pollInterval)
            } catch {
                return
            }
            if (try? await store.send(id))?.status == .cancelled {
                cancelled(id)
                return
            }
        }
    }
}
