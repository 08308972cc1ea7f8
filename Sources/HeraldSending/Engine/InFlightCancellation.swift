import Synchronization

/// Cancels what a running send has in flight, from outside its run (`FanOut.run`): the worker uses it when the send is
/// cancelled, and when a graceful shutdown outlasts its grace.
///
/// The run then sends nothing more and cancels its requests waiting for APNs (those not yet written are never written,
/// the others have their streams reset); it records what APNs had answered and ends without waiting for the rest.
/// A device whose request was cancelled gets no outcome, not a failure: APNs may or may not have received it, and a
/// later run of the send would send it again with the same `apns-id`, as after `kill -9`.
package final class InFlightCancellation: Sendable {
    private struct State {
        var cancelled = false
        var onCancel: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels the run's requests in flight; later calls do nothing.
    package func cancel() {
        let onCancel = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            defer { state.onCancel = nil }
            return state.onCancel
        }
        onCancel?()
    }

    /// Calls `action` once, when ``cancel()`` is called (at once if it was already); replaces an earlier action.
    func whenCancelled(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.cancelled { return true }
            state.onCancel = action
            return false
        }
        if now { action() }
    }
}
