import Synchronization

/// A wake-up for one waiting task: ``signal()`` before ``wait()`` is remembered, so no wake-up is lost.
///
/// `wait()` also returns when its task is cancelled. A cancelled wait may leave one spurious wake-up behind, which a
/// caller that re-checks its condition after waking ignores.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// A signal with no wake-up pending.
    public init() {}

    /// Wakes the waiting task, or the next one to wait.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns after a signal (possibly one sent before the call), or when the task is cancelled.
    public func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }

    /// Returns after a signal, cancellation, or `timeout` on `clock`, whichever comes first.
    public func wait(timeout: Duration, clock: any Clock<Duration>) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait() }
            group.addTask { try? await clock.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }
}
