import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// A worker's looks at the queue and the ends of its runs, for those who wait on them: a shutdown waiting for the runs
/// to end, tests and tools that must know a send finished (``SendWorker/waitUntilFinished(_:)``), or that the worker
/// looked and found nothing (``SendWorker/waitUntilIdle()``). The worker's loop only reports what it does — a look began, it found nothing, a
/// run ended — and the rules of who is woken when live here.
final class WorkerLooks: Sendable {
    /// Looks for queued sends, counted, and who waits for one that finds nothing.
    private struct Looks {
        var started = 0
        /// Whether the worker found nothing and waits for a wake-up or its next poll.
        var waiting = false
        /// Whether the worker looks again as soon as its current look finds nothing.
        var lookAgain = false
        var idleWaiters: [UUID: (after: Int, untilSendsEnd: Bool, signal: WakeSignal)] = [:]
    }

    private let looks = Mutex(Looks())
    /// Who waits for a run to end (``waitFor(clock:_:)``).
    private let waiters = Mutex<[UUID: WakeSignal]>([:])

    /// How long ``waitFor(clock:_:)`` waits before it evaluates again after a transient store error.
    static let retryAfterStoreError: Duration = .milliseconds(200)

    // MARK: What the worker reports

    /// A look at the queue began: returns its number.
    func began() -> Int {
        looks.withLock { looks in
            looks.started += 1
            return looks.started
        }
    }

    /// Look `look` found nothing to claim: wakes those who waited for such a look (those who wait until no send runs
    /// only when none ran during it) and those who wait for a run's end.
    /// - Returns: Whether the worker is to look once more at once, for a waiter that came during this look; otherwise
    ///   it waits for a wake-up or its next poll, and reports ``waitEnded()`` after.
    func foundNothing(_ look: Int, sendsRunning: Bool) -> Bool {
        let (idle, lookAgain) = looks.withLock { looks in
            let waking = looks.idleWaiters.filter { $0.value.after < look && !(sendsRunning && $0.value.untilSendsEnd) }
            for key in waking.keys { looks.idleWaiters.removeValue(forKey: key) }
            // Another look only for a waiter this one could not satisfy (it came during this look): a look more after
            // satisfying them all could take a send they store next and rely on staying queued.
            let lookAgain = looks.lookAgain && !looks.idleWaiters.isEmpty
            looks.lookAgain = false
            looks.waiting = !lookAgain
            return (waking.values.map(\.signal), lookAgain)
        }
        for signal in idle { signal.signal() }
        runEnded()
        return lookAgain
    }

    /// The worker stopped waiting: it looks again.
    func waitEnded() {
        looks.withLock { $0.waiting = false }
    }

    /// A run ended: those waiting on a condition evaluate it again.
    func runEnded() {
        for signal in waiters.withLock({ Array($0.values) }) { signal.signal() }
    }

    // MARK: Waiting

    /// Re-evaluates `condition` whenever a run ends or the worker goes idle, until it gives a value; after a transient
    /// store error, again after ``retryAfterStoreError`` on `clock` (a run may have ended meanwhile, and no wake-up
    /// would come again).
    func waitFor<T: Sendable>(
        clock: any Clock<Duration>, _ condition: @Sendable () async throws -> T?
    ) async throws -> T {
        let signal = WakeSignal()
        let key = UUID()
        waiters.withLock { $0[key] = signal }
        defer { _ = waiters.withLock { $0.removeValue(forKey: key) } }
        while true {
            do {
                if let value = try await condition() { return value }
            } catch let error as StoreError where error.isTransient {
                try await clock.sleep(for: Self.retryAfterStoreError)
                continue
            }
            await signal.wait()
            try Task.checkCancellation()
        }
    }

    /// Returns once a look that began after this call found nothing — and, `untilSendsEnd`, ran no send meanwhile.
    /// - Parameter wake: The worker's wake-up, signalled when it waits now.
    func waitForLook(untilSendsEnd: Bool, wake: WakeSignal) async {
        let signal = WakeSignal()
        let key = UUID()
        // A waiting worker is woken; one that is looking now looks once more when this look finds nothing. A wake-up
        // signal left pending instead would make the worker look again later, after the caller relied on its idling.
        let waiting = looks.withLock { looks in
            looks.idleWaiters[key] = (after: looks.started, untilSendsEnd: untilSendsEnd, signal: signal)
            if !looks.waiting { looks.lookAgain = true }
            return looks.waiting
        }
        defer { _ = looks.withLock { $0.idleWaiters.removeValue(forKey: key) } }
        if waiting { wake.signal() }
        await signal.wait()
    }
}
