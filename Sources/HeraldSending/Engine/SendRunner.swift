import Foundation
import HeraldCore
import HeraldStore
import Logging

/// Performs one claimed send, or one shard of a large send: reads its stored job into a plan, cuts a large send into
/// shards, sends each wave of a `localTime` send, runs the fan-out under the worker's lease, and marks how it ended
/// (completed, failed, put back in the queue for a shutdown or an outage, cancelled).
///
/// The worker (``SendWorker``) decides what runs and when; this decides nothing about the queue. What it needs of the
/// worker while it runs — whether the instance is shutting down, whether the send was cancelled, the cancellation of
/// its requests in flight — comes in a ``Control``.
struct SendRunner: Sendable {
    /// What a run needs of the worker that claimed it.
    struct Control: Sendable {
        /// Cancels the run's requests in flight when its send is cancelled.
        let inFlight: InFlightCancellation?
        /// Whether the instance is shutting down: the run stops sending and puts its send back in the queue.
        let isShuttingDown: @Sendable () -> Bool
        /// Whether the send was cancelled while this run performed it.
        let isCancelled: @Sendable () -> Bool
        /// Marks the send cancelled (another instance cancelled it): the run stops at its next event.
        let markCancelled: @Sendable () -> Void
        /// Makes the worker look at the queue again: the run put a send or shards there.
        let wake: @Sendable () -> Void

        /// Whether the run is to stop sending: a shutdown, or its send cancelled.
        var shouldStop: @Sendable () -> Bool {
            { [isShuttingDown, isCancelled] in isShuttingDown() || isCancelled() }
        }
    }

    let store: any Store
    /// The apps this server has APNs credentials for: a send of another app fails instead of running.
    let servedApps: Set<String>
    /// Reads the version-1 jobs older servers stored.
    let legacyJobs: any LegacyJobReader
    let fanOut: FanOut
    let broadcaster: Broadcaster
    let leaseDuration: Duration
    /// How often a running send's status is read again, for a cancellation through another instance.
    let pollInterval: Duration
    let catchUpLimit: TimeInterval
    /// Sends to more devices than this are cut into shards of this size; 0: never.
    let shardSize: Int
    /// Each app's priority and weight in the shared budget.
    let appShares: [String: InFlightBudget.AppShare]
    /// The worker's name: what its leases are held under.
    let name: String
    let clock: any Clock<Duration>
    let wallClock: any WallClock
    let metrics: (any SendingMetrics)?
    let logger: Logger

    func perform(_ record: SendRecord, control: Control) async {
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
            if oneWave, try await cutIntoShards(record, plan, logger: logger, control: control) { return }
            logger.info(
                record.counts.total == 0
                    ? "Starting a background send"
                    : "Resuming a background send: skipping the devices already recorded",
                metadata: [LogKey.count: "\(record.targetCount ?? -1)"])
            let result = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await self.watchForCancellation(of: record.id, control: control) }
                let result = try await fanOut.run(
                    plan, send: record.id, createdAt: record.createdAt, after: record.checkpoint,
                    resuming: record.counts.total > 0 || record.sentThrough != nil,
                    lease: FanOut.Lease(worker: name, duration: leaseDuration), collect: false, lane: record.lane,
                    share: appShares[plan.bundleID] ?? .init(),
                    cancellation: control.inFlight,
                    shouldStop: control.shouldStop)
                group.cancelAll()
                return result
            }
            if control.isCancelled() {
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
            try? await outage(logger).retrying("put a send back in the queue", givenUp: control.isShuttingDown) {
                _ = try await self.store.updateSend(record.id, SendUpdate(status: .queued))
            }
            control.wake()
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
    private func cutIntoShards(
        _ record: SendRecord, _ plan: SendPlan, logger: Logger, control: Control
    ) async throws -> Bool {
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
        control.wake()
        return true
    }

    /// The most shards a send is cut into; a larger send has larger shards at the end.
    static let maximumShards = 10_000

    /// Runs one shard of a large send: its range of the target, with its own lease and checkpoint. The run that ends
    /// the send's last shard completes the send.
    func performShard(_ shard: SendShard, of record: SendRecord, control: Control) async {
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
                group.addTask { await self.watchForCancellation(of: record.id, control: control) }
                let result = try await fanOut.run(
                    plan.bounded(through: shard.through), send: record.id, createdAt: record.createdAt,
                    after: shard.resumesAfter,
                    resuming: shard.recorded > 0 || shard.checkpoint != nil,
                    lease: FanOut.Lease(worker: name, duration: leaseDuration, shard: shard.index), collect: false,
                    lane: record.lane, share: appShares[plan.bundleID] ?? .init(),
                    cancellation: control.inFlight,
                    shouldStop: control.shouldStop)
                group.cancelAll()
                return result
            }
            if result.finished, !control.isCancelled() {
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
            try? await outage(logger).retrying("put a shard back in the queue", givenUp: control.isShuttingDown) {
                _ = try await self.store.endShardRun(of: key.id, shard: key.shard, worker: self.name, status: .queued)
            }
            control.wake()
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
    private func watchForCancellation(of id: SendID, control: Control) async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: pollInterval)
            } catch {
                return
            }
            if (try? await store.send(id))?.status == .cancelled {
                control.markCancelled()
                return
            }
        }
    }
}
