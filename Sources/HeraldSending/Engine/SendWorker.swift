import Foundation
package import HeraldCore
package import HeraldStore
package import Logging
import ServiceLifecycle
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
package final class SendWorker: Service, Sendable {
    private let store: any Store
    /// Performs what this worker claims.
    private let runner: SendRunner
    private let leaseDuration: Duration
    private let pollInterval: Duration
    private let shutdownGrace: Duration
    private let clock: any Clock<Duration>
    private let wallClock: any WallClock
    private let logger: Logger
    /// The instance id this worker runs under (`HERALD_INSTANCE_ID`).
    package let instance: String
    /// The name this worker claims sends under: instance id, process and a random suffix.
    package let name: String
    private let wakeup = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    /// The worker's looks at the queue and the ends of its runs, for those who wait on them.
    private let looks = WorkerLooks()
    private let storeReady: Gate
    /// The most sends running at once in each lane.
    private let runningLimit: Int
    /// The order in which waiting sends of a lane are claimed: by their app's priority, then oldest first.
    private let precedence: ClaimPrecedence
    /// The runs being performed (a whole send, or one shard of a large send), with their lane and whether their send
    /// was cancelled meanwhile.
    private let running = Mutex<[RunKey: RunningSend]>([:])
    private let metrics: (any SendingMetrics)?

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
    package init(
        store: any Store, servedApps: Set<String>, legacyJobs: any LegacyJobReader, fanOut: FanOut,
        broadcaster: Broadcaster, sending: SendingSettings, instance: String,
        clock: any Clock<Duration>, wallClock: any WallClock, storeReady: Gate, logger: Logger,
        appShares: [String: InFlightBudget.AppShare] = [:], metrics: (any SendingMetrics)? = nil
    ) {
        self.storeReady = storeReady
        self.runningLimit = sending.runningSendsPerLane
        self.shardRunsPerSend = max(1, sending.shardRunsPerSend)
        precedence = ClaimPrecedence(priorities: appShares.mapValues(\.priority))
        self.metrics = metrics
        self.store = store
        self.leaseDuration = sending.leaseDuration
        self.pollInterval = sending.pollInterval
        self.shutdownGrace = sending.shutdownGrace
        self.clock = clock
        self.wallClock = wallClock
        self.logger = logger
        self.instance = instance
        let name = "\(instance)/\(ProcessInfo.processInfo.processIdentifier)/\(UUID().uuidString.prefix(8).lowercased())"
        self.name = name
        runner = SendRunner(
            store: store, servedApps: servedApps, legacyJobs: legacyJobs, fanOut: fanOut, broadcaster: broadcaster,
            leaseDuration: sending.leaseDuration, pollInterval: sending.pollInterval,
            catchUpLimit: FanOut.seconds(sending.catchUpLimit), shardSize: sending.shardSize, appShares: appShares,
            name: name, clock: clock, wallClock: wallClock, metrics: metrics, logger: logger)
    }

    /// Claims and performs queued sends until graceful shutdown or cancellation, holding the instance's lock.
    package func run() async throws {
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
                let look = looks.began()
                let runningAtStart = !running.withLock { $0.isEmpty }
                var claimed = false
                while !stopping.load(ordering: .relaxed), let claim = await claimNext() {
                    claimed = true
                    let control = control(of: claim.key)
                    group.addTask {
                        switch claim {
                        case .send(let record): await self.runner.perform(record, control: control)
                        case .shard(let record, let shard):
                            await self.runner.performShard(shard, of: record, control: control)
                        }
                        self.running.withLock { _ = $0.removeValue(forKey: claim.key) }
                        self.metrics?.sendsRunning(self.runningPerLane())
                        self.looks.runEnded()
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
                guard !looks.foundNothing(look, sendsRunning: sendsRunning) else { continue }
                await wakeup.wait(timeout: await untilNextLook(), clock: clock)
                looks.waitEnded()
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
                _ = try? await self.looks.waitFor(clock: self.clock) { self.running.withLock { $0.isEmpty } ? true : nil }
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
    package func runningPerLane() -> [SendLane: Int] {
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
    package func wake() { wakeup.signal() }

    /// Tells the worker a send was cancelled through this instance: if it is performing that send, it stops at its
    /// next event instead of at its next status check.
    package func cancelled(_ id: SendID) {
        let runs = running.withLock { running in
            for key in running.keys where key.send == id { running[key]?.cancelled = true }
            return running.filter { $0.key.send == id }.map(\.value.inFlight)
        }
        for run in runs { run.cancel() }
    }

    /// What a run of this worker needs of it while it runs.
    private func control(of key: RunKey) -> SendRunner.Control {
        SendRunner.Control(
            inFlight: running.withLock { $0[key]?.inFlight },
            isShuttingDown: { self.stopping.load(ordering: .relaxed) },
            isCancelled: { self.isCancelled(key.send) },
            markCancelled: { self.cancelled(key.send) },
            wake: { self.wakeup.signal() })
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
    package func waitUntilFinished(_ id: SendID) async throws -> SendRecord {
        try await looks.waitFor(clock: clock) { [store, name] in
            guard let record = try await store.send(id) else {
                throw StoreError(.notFound, "There is no send \(id).")
            }
            return record.status.isFinal && record.worker != name ? record : nil
        }
    }

    /// Returns once the worker has looked for queued sends and found none, in a look that began after this call with
    /// no send running (so it saw whatever the sends it ran put back in the queue), and waits for a wake-up
    /// (``wake()``) or its next poll: for tests that must know what a worker did, or did not take, or that store a
    /// send it must not take yet.
    package func waitUntilIdle() async {
        await looks.waitForLook(untilSendsEnd: true, wake: wakeup)
    }

    /// Returns once the worker has looked for queued sends and found none (or no room in their lanes), in a look that
    /// began after this call, whatever it still runs: for tests that must know a send was left waiting.
    package func waitUntilLookedAgain() async {
        await looks.waitForLook(untilSendsEnd: false, wake: wakeup)
    }

    private func leaseEnd() -> Date {
        wallClock.now().addingTimeInterval(FanOut.seconds(leaseDuration))
    }
}
