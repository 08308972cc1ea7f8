import Foundation
import HTTPTypes
import HeraldCore
public import HeraldStore
import Logging
public import ServiceLifecycle
import Synchronization

/// Runs background sends: claims the oldest queued send (or one whose worker's lease ran out), performs it with a
/// lease it keeps renewing, and marks it completed or failed.
///
/// Several instances on one PostgreSQL database share the queue: a claim gives a send to one worker, and a worker that
/// dies loses its lease, so another instance resumes the send once the lease runs out (docs/reliability.md). A worker
/// is named after its instance id (`instance/pid/random`) and holds its instance's lock for its whole run
/// (``HeraldStore/DeliveryStore/withInstanceLock(_:_:)``): once it has the lock, no earlier run of the same instance
/// can be alive, so it puts back the sends that run held and resumes them at once. When another process holds the
/// lock (two servers with one instance id), it says so and leaves those sends to their leases, trying the lock again
/// at each poll. On SQLite the database is this server's alone, so every send an earlier run held is put back. On
/// graceful shutdown the worker stops sending, records what is in flight, and puts the send back in the queue, so the
/// next start resumes it at once. A resumed send skips the devices already recorded.
public final class SendWorker: Service, Sendable {
    private let store: any Store
    private let apps: AppDirectory
    private let fanOut: FanOut
    private let leaseDuration: Duration
    private let pollInterval: Duration
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

    init(
        store: any Store, apps: AppDirectory, fanOut: FanOut, sending: ServerConfiguration.Sending, instance: String,
        clock: any Clock<Duration>, wallClock: any WallClock, storeReady: Gate, logger: Logger
    ) {
        self.storeReady = storeReady
        self.store = store
        self.apps = apps
        self.fanOut = fanOut
        self.leaseDuration = sending.leaseDuration
        self.pollInterval = sending.pollInterval
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
        } onGracefulShutdown: {
            self.stopping.store(true, ordering: .relaxed)
            self.wakeup.signal()
        }
    }

    private func work(_ lock: InstanceLock?) async {
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
            var claimed: SendRecord?
            do {
                claimed = try await store.claimNextQueuedSend(worker: name, leaseUntil: leaseEnd())
            } catch {
                logger.warning("Cannot look for queued sends", metadata: [LogKey.error: "\(error)"])
            }
            if let claimed {
                await perform(claimed)
            } else {
                let idle = polls.withLock { polls in
                    let waking = polls.idleWaiters.filter { $0.value.after < poll }
                    for key in waking.keys { polls.idleWaiters.removeValue(forKey: key) }
                    return waking.values.map(\.signal)
                }
                for signal in idle { signal.signal() }
                await wakeup.wait(timeout: pollInterval, clock: clock)
            }
        }
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
    func wake() { wakeup.signal() }

    /// Waits until a send is completed or failed, and returns it.
    ///
    /// For tests and tools: wakes whenever this worker finishes a send, and re-reads the record.
    /// - Throws: ``HeraldStore/StoreError`` `.notFound` for an unknown send; `CancellationError`.
    public func waitUntilFinished(_ id: SendID) async throws -> SendRecord {
        let signal = WakeSignal()
        let key = UUID()
        waiters.withLock { $0[key] = signal }
        defer { _ = waiters.withLock { $0.removeValue(forKey: key) } }
        while true {
            guard let record = try await store.send(id) else {
                throw StoreError(.notFound, "There is no send \(id).")
            }
            if record.status.isFinal { return record }
            await signal.wait()
            try Task.checkCancellation()
        }
    }

    /// Returns once the worker has looked for queued sends and found none, in a look that began after this call:
    /// for tests that must know what a worker did not take.
    func waitUntilIdle() async {
        let signal = WakeSignal()
        let key = UUID()
        polls.withLock { $0.idleWaiters[key] = (after: $0.started, signal: signal) }
        defer { _ = polls.withLock { $0.idleWaiters.removeValue(forKey: key) } }
        wakeup.signal()
        await signal.wait()
    }

    /// Looks for queued sends, counted, and who waits for one that finds nothing.
    private struct Polls {
        var started = 0
        var idleWaiters: [UUID: (after: Int, signal: WakeSignal)] = [:]
    }

    private func leaseEnd() -> Date {
        wallClock.now().addingTimeInterval(FanOut.seconds(leaseDuration))
    }

    private func perform(_ record: SendRecord) async {
        var logger = logger
        logger[metadataKey: LogKey.sendID] = "\(record.id)"
        defer {
            for signal in waiters.withLock({ Array($0.values) }) { signal.signal() }
        }
        do {
            guard let job = record.job, let value = try? JSONValue(parsing: job) else {
                _ = try await store.updateSend(
                    record.id, SendUpdate(status: .failed, message: "The stored job is missing or unreadable."))
                return
            }
            let plan: SendPlan
            do {
                plan = try SendPlan(json: value, apps: apps)
            } catch {
                logger.error("A queued send no longer validates", metadata: [LogKey.error: "\(error.message)"])
                _ = try await store.updateSend(record.id, SendUpdate(status: .failed, message: error.message))
                return
            }
            logger.info(
                record.counts.total == 0
                    ? "Starting a background send"
                    : "Resuming a background send: skipping the devices already recorded",
                metadata: [LogKey.count: "\(record.targetCount ?? -1)"])
            let result = try await fanOut.run(
                plan, send: record.id, after: record.checkpoint, resuming: record.counts.total > 0,
                lease: FanOut.Lease(worker: name, duration: leaseDuration),
                collect: false, shouldStop: { self.stopping.load(ordering: .relaxed) })
            if result.finished {
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
        } catch {
            logger.error("A background send failed", metadata: [LogKey.error: "\(error)"])
            _ = try? await store.updateSend(record.id, SendUpdate(status: .failed, message: "\(error)"))
        }
    }
}
