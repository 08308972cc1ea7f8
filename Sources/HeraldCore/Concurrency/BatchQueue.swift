import Synchronization

/// A queue that many producers push to and one consumer drains in batches: the consumer takes everything there is at
/// once, so it wakes once per batch rather than once per item.
///
/// Built for the send paths, where event-loop callbacks report answers faster than a task could be woken for each,
/// and used for group commits, where whatever arrived during one commit goes in the next. Producers never wait; one
/// consumer at a time may wait in ``take()``. A consumer that stops for good calls ``close()``, so that no item is
/// left waiting for it.
public final class BatchQueue<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var waiter: UnsafeContinuation<Void, Never>?
        var closed = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Adds an item and wakes the consumer if it waits.
    /// - Returns: `false`, adding nothing, once the queue is closed: nobody would take the item.
    @discardableResult
    public func push(_ item: Item) -> Bool {
        let (added, waiter) = state.withLock { state -> (Bool, UnsafeContinuation<Void, Never>?) in
            guard !state.closed else { return (false, nil) }
            state.items.append(item)
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume()
        return added
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

    /// Refuses every later ``push(_:)`` and returns the items not taken, for the consumer that stops to answer them.
    /// Call it once no ``take()`` waits.
    public func close() -> [Item] {
        state.withLock { state in
            state.closed = true
            defer { state.items = [] }
            return state.items
        }
    }
}
