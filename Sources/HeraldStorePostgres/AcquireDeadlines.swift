import HeraldCore
import Synchronization

/// The deadlines of operations — waiting for a connection, then running on it — watched by one task instead of a
/// timer task each.
///
/// A timer task per operation (a task, a sleep and its cancellation) was about 8 % of the server's CPU for a one-device
/// send on PostgreSQL. The watch sleeps until the earliest deadline, expires those that passed, and sleeps again; with
/// nothing waiting it sleeps until something is added. It is woken early only by a deadline earlier than the one it
/// sleeps until (the limits differ: a wait, an operation, the short ones while the database is away).
final class AcquireDeadlines: Sendable {
    /// Why a deadline's `expire` runs.
    enum Expiry: Sendable {
        /// It passed.
        case passed
        /// The operation's connection went silent: ``expireOperations(acquiredBefore:)``.
        case pathSilent
    }

    private struct Entry {
        let deadline: ContinuousClock.Instant
        /// Whether it limits an operation that has its connection (rather than a wait for one).
        let operation: Bool
        /// When it was added: for an operation, about when it got its connection.
        let added: ContinuousClock.Instant
        let expire: @Sendable (Expiry) -> Void
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 0
        /// The deadline the watch sleeps until, if it sleeps.
        var sleepingUntil: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    /// Wakes the watch when a deadline is added while none was waiting.
    private let added = BatchQueue<Void>()
    /// Wakes the watch sleeping until a later deadline when the deadlines were tightened.
    private let tightened = BatchQueue<Void>()

    /// Watches `deadline`: `expire` runs once it passes, unless ``remove(_:)`` came first.
    /// - Parameter operation: Whether it is the time limit of an operation that has its connection, rather than of a
    ///   wait for one.
    /// - Returns: What to pass to ``remove(_:)``.
    func add(
        _ deadline: ContinuousClock.Instant, operation: Bool = false, expire: @escaping @Sendable (Expiry) -> Void
    ) -> Int {
        let (id, first, earlier) = state.withLock { state in
            defer { state.nextID += 1 }
            state.entries[state.nextID] = Entry(
                deadline: deadline, operation: operation, added: .now, expire: expire)
            return (state.nextID, state.entries.count == 1, state.sleepingUntil.map { deadline < $0 } ?? false)
        }
        if first { added.push(()) }
        // Limits differ (a wait for a connection, an operation, the shorter ones while the database is away): a
        // deadline before the one the watch sleeps until wakes it.
        if earlier { tightened.push(()) }
        return id
    }

    /// Brings every deadline to at most `limit` from now (`operationLimit` for operations that have their connection):
    /// the database went away, and the operations waiting on it must fail within that, not within their own limits.
    func tighten(to limit: Duration, operationsTo operationLimit: Duration? = nil) {
        let now = ContinuousClock.now
        let (latest, latestOperation) = (now + limit, now + (operationLimit ?? limit))
        let changed = state.withLock { state -> Bool in
            var changed = false
            for (id, entry) in state.entries {
                let bound = entry.operation ? latestOperation : latest
                guard entry.deadline > bound else { continue }
                state.entries[id] = Entry(
                    deadline: bound, operation: entry.operation, added: entry.added, expire: entry.expire)
                changed = true
            }
            return changed
        }
        // The watch may sleep until a later deadline: wake it to sleep until this one.
        if changed { tightened.push(()) }
    }

    /// Expires at once the limits of the operations that got their connection before `instant`, as connections gone
    /// silent: the pulse found that connections opened before then get no answer, where a new one does.
    func expireOperations(acquiredBefore instant: ContinuousClock.Instant) {
        let silent = state.withLock { state -> [Entry] in
            let silent = state.entries.filter { $0.value.operation && $0.value.added < instant }
            for id in silent.keys { state.entries.removeValue(forKey: id) }
            return Array(silent.values)
        }
        for entry in silent { entry.expire(.pathSilent) }
    }

    /// When the operation that has had its connection longest got it; `nil` when none has one.
    var oldestOperation: ContinuousClock.Instant? {
        state.withLock { state in state.entries.values.lazy.filter(\.operation).map(\.added).min() }
    }

    /// Stops watching a deadline (its operation got a connection, or ended).
    func remove(_ id: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// Watches the deadlines until the task is cancelled.
    func run() async {
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let (expired, next) = state.withLock { state -> ([Entry], ContinuousClock.Instant?) in
                let passed = state.entries.filter { $0.value.deadline <= now }
                for id in passed.keys { state.entries.removeValue(forKey: id) }
                state.sleepingUntil = state.entries.values.lazy.map(\.deadline).min()
                return (Array(passed.values), state.sleepingUntil)
            }
            for entry in expired { entry.expire(.passed) }
            if let next {
                // Until the next deadline, or an earlier one added or tightened meanwhile.
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { try? await Task.sleep(until: next, clock: .continuous) }
                    group.addTask { _ = try? await self.tightened.take() }
                    await group.next()
                    group.cancelAll()
                }
            } else {
                _ = try? await added.take()
            }
        }
    }
}
