import Synchronization

/// A value that arrives once, for any number of waiting tasks: the first ``fulfil(_:)`` sets it, later ones are
/// ignored. For answers that may come from one of several places (a result, a timeout, a cancellation), or from a
/// thread that is not a task.
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var nextID = 0
        /// Resumed with the value, or with `nil` when a cancellable wait's task is cancelled.
        var waiters: [Int: CheckedContinuation<Value?, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The value, once it arrived.
    public var value: Value? { state.withLock { $0.value } }

    /// Sets the value and wakes every waiter.
    /// - Returns: `false`, changing nothing, when a value arrived already.
    @discardableResult
    public func fulfil(_ value: Value) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Value?, Never>]? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    /// The value, waiting until it arrives.
    /// - Throws: `CancellationError` when the task is cancelled before it arrives (a test's time limit, a shutdown).
    public func wait() async throws(CancellationError) -> Value {
        let id = nextID()
        let value = await withTaskCancellationHandler {
            await suspend(id, honouringCancellation: true)
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
        guard let value else { throw CancellationError() }
        return value
    }

    /// The value, waiting until it arrives even when the task is cancelled. Only for a caller whose cancellation
    /// handler makes the value arrive (fulfils it, or ends what fulfils it, such as a child process it kills), and
    /// that must not return before it does.
    public func waitEvenIfCancelled() async -> Value {
        // Resumed only by fulfil: nothing removes this waiter on cancellation.
        await suspend(nextID(), honouringCancellation: false)!
    }

    private func nextID() -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    private func suspend(_ id: Int, honouringCancellation: Bool) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let answer = state.withLock { state -> Value?? in
                if let value = state.value { return .some(value) }
                if honouringCancellation, Task.isCancelled { return .some(nil) }
                state.waiters[id] = continuation
                return .none
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }
}
