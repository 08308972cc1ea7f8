import Synchronization

/// A value behind a lock that tasks can wait on until a condition of it holds. The condition is checked under the
/// same lock as every change, so a change made between a waiter's check and its suspension is never missed.
public final class WatchedState<Value: Sendable>: Sendable {
    private struct State {
        var value: Value
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
    }

    private let state: Mutex<State>
    private let isReady: @Sendable (Value) -> Bool

    /// - Parameter isReady: The condition waiters wait for.
    public init(_ value: Value, readyWhen isReady: @escaping @Sendable (Value) -> Bool) {
        state = Mutex(State(value: value))
        self.isReady = isReady
    }

    /// Changes the value; once the condition holds after the change, every waiter is let through.
    @discardableResult
    public func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        let (result, waiters) = state.withLock { state in
            let result = body(&state.value)
            guard isReady(state.value) else { return (result, [CheckedContinuation<Void, Never>]()) }
            defer { state.waiters = [:] }
            return (result, Array(state.waiters.values))
        }
        for waiter in waiters { waiter.resume() }
        return result
    }

    /// The value now.
    public var value: Value { state.withLock { $0.value } }

    /// Returns once the condition holds, or when the task is cancelled: check ``value`` or `Task.isCancelled` after.
    public func wait() async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if isReady(state.value) || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
