import Synchronization

/// A queue that many producers push to and one consumer drains in batches: the consumer takes everything there is at
/// once, so it wakes once per batch rather than once per item.
///
/// Built for the send paths, where event-loop callbacks report answers faster than a task could be woken for each.
/// Producers never wait; one consumer at a time may wait in ``take()``.
public final class BatchQueue<Item: Sendable>: Sendable {
    private let state = Mutex<(items: [Item], waiter: UnsafeContinuation<Void, Never>?)>(([], nil))

    public init() {}

    /// Adds an item and wakes the consumer if it waits.
    public func push(_ item: Item) {
        let waiter = state.withLock { state in
            state.items.append(item)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Everything pushed so far, waiting until there is something.
    /// - Throws: `CancellationError` when the waiting task is cancelled and nothing is there.
    public func take() async throws(CancellationError) -> [Item] {
        while true {
            let items = state.withLock { state in
                defer { state.items = [] }
                return state.items
            }
            if !items.isEmpty { return items }
            if Task.isCancelled { throw CancellationError() }
            await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    let ready = state.withLock { state in
                        if !state.items.isEmpty || Task.isCancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                state.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }?.resume()
            }
        }
    }
}
