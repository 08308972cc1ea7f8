import HeraldCore
import Synchronization

/// The deadlines of operations waiting for a connection, watched by one task instead of a timer task each.
///
/// A timer task per operation (a task, a sleep and its cancellation) was about 8 % of the server's CPU for a one-device
/// send on PostgreSQL. Every operation of a store waits at most the same acquire timeout, so deadlines come in the
/// order they were added: the watch sleeps until the oldest one, gives up the operations whose deadline passed, and
/// sleeps again; with nothing waiting it sleeps until something is added.
final class AcquireDeadlines: Sendable {
    private struct Entry {
        let deadline: ContinuousClock.Instant
        let expire: @Sendable () -> Void
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    /// Wakes the watch when a deadline is added while none was waiting.
    private let added = BatchQueue<Void>()

    /// Watches `deadline`: `expire` runs once it passes, unless ``remove(_:)`` came first.
    /// - Returns: What to pass to ``remove(_:)``.
    func add(_ deadline: ContinuousClock.Instant, expire: @escaping @Sendable () -> Void) -> Int {
        let (id, first) = state.withLock { state in
            defer { state.nextID += 1 }
            state.entries[state.nextID] = Entry(deadline: deadline, expire: expire)
            return (state.nextID, state.entries.count == 1)
        }
        if first { added.push(()) }
        return id
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
                return (Array(passed.values), state.entries.values.lazy.map(\.deadline).min())
            }
            for entry in expired { entry.expire() }
            if let next {
                try? await Task.sleep(until: next, clock: .continuous)
            } else {
                _ = try? await added.take()
            }
        }
    }
}
