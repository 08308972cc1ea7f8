import Synchronization

/// A value that arrives once, for any number of waiting tasks: the first ``fulfil(_:)`` sets it, later ones are
/// ignored. For answers that may come from one of several places (a result, a timeout, a cancellation), or from a
/// thread that is not a task.
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// The value, once it arrived.
    public var value: Value? { state.withLock { $0.value } }

    /// Sets the value and wakes every waiter.
    /// - Returns: `false`, changing nothing, when a value arrived already.
    @discardableResult
    public func fulfil(_ value: Value) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>]? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    /// The value, waiting until it arrives.
    public func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
