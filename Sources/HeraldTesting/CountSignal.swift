import Synchronization

/// A count that tests can wait on: "return once at least N requests arrived", "once N sleepers are waiting".
///
/// The producer reports the current count with ``update(_:)``; ``wait(untilAtLeast:)`` returns as soon as the count
/// reaches the threshold, at once if it already has. Waiting on events this way replaces sleeping in tests.
public final class CountSignal: Sendable {
    private struct State {
        var count = 0
        var nextWaiter = 0
        var waiters: [Int: (threshold: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
    }

    private let state = Mutex(State())

    /// Starts at 0.
    public init() {}

    /// The last count reported.
    public var count: Int { state.withLock { $0.count } }

    /// Reports the current count and wakes every waiter whose threshold it reaches.
    public func update(_ count: Int) {
        let ready = state.withLock { state in
            state.count = count
            let ready = state.waiters.filter { $0.value.threshold <= count }
            for key in ready.keys { state.waiters.removeValue(forKey: key) }
            return ready.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once the count is at least `threshold`, or when the task is cancelled (a test's time limit): check
    /// ``count`` after, as a cancelled wait returns whatever the count is.
    public func wait(untilAtLeast threshold: Int) async {
        let key = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let reached = state.withLock { state in
                    if state.count >= threshold || Task.isCancelled { return true }
                    state.waiters[key] = (threshold, continuation)
                    return false
                }
                if reached { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: key) }?.continuation.resume()
        }
    }
}
