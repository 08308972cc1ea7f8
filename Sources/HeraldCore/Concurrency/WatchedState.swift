import Synchronization

/// A value behind a lock that tasks can wait on until a condition of it holds. The condition is checked under the
/// same lock as every change, so a change made between a waiter's check and its suspension is never missed.
///
/// Every wait also returns when its task is cancelled, so a stuck wait never outlives a test's time limit or a shutdown.
public final class WatchedState<Value: Sendable>: Sendable {
    private struct Waiter {
        let isReady: @Sendable (Value) -> Bool
        let continuation: CheckedContinuation<Value?, Never>
    }

    private struct State {
        var value: Value
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
    }

    private let state: Mutex<State>
    private let isReady: @Sendable (Value) -> Bool

    /// - Parameter isReady: The condition ``wait()`` waits for; ``wait(until:)`` takes its own.
    public init(_ value: Value, readyWhen isReady: @escaping @Sendable (Value) -> Bool) {
        state = Mutex(State(value: value))
        self.isReady = isReady
    }

    /// Changes the value; every waiter whose condition holds after the change is let through.
    @discardableResult
    public func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        let (result, ready) = state.withLock { state in
            let result = body(&state.value)
            let value = state.value
            let ready = state.waiters.filter { $0.value.isReady(value) }
            for id in ready.keys { state.waiters.removeValue(forKey: id) }
            return (result, ready.values.map { ($0.continuation, value) })
        }
        for (continuation, value) in ready { continuation.resume(returning: value) }
        return result
    }

    /// The value now.
    public var value: Value { state.withLock { $0.value } }

    /// Returns once the condition given to `init` holds, or when the task is cancelled: check ``value`` or
    /// `Task.isCancelled` after.
    public func wait() async {
        await wait(until: isReady)
    }

    /// Returns the value once `condition` holds of it (at once if it holds now), or `nil` when the task is cancelled
    /// first.
    @discardableResult
    public func wait(until condition: @escaping @Sendable (Value) -> Bool) async -> Value? {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                let answer = state.withLock { state -> Value?? in
                    if condition(state.value) { return .some(state.value) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = Waiter(isReady: condition, continuation: continuation)
                    return .none
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: nil)
        }
    }
}
