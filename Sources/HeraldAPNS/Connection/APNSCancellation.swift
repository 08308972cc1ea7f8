import NIOCore
import Synchronization

/// Cancels requests together: the one request of a caller waiting in a task, or every request a bulk send started
/// without a task (``APNSBulkSend/cancelInFlight()``).
///
/// Once ``cancel()`` is called, a request that carries it and was not yet written is never written, and one already
/// written has its stream reset (RST_STREAM CANCEL): either way its answer is ``APNSClientError/Code/cancelled`` at
/// once, and a late answer from APNs for the reset stream is ignored. A request answered before the cancellation keeps
/// its answer. Every request is answered exactly once whichever comes first: the event loop decides, one request at a
/// time.
public final class APNSCancellation: Sendable {
    private let cancelled = Atomic<Bool>(false)
    /// The connections that took a request carrying it, to reach those requests on their event loops.
    private let connections = Mutex<[APNSConnection]>([])

    public init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Cancels every request that carries it: those in flight now, and any submitted later.
    public func cancel() {
        let reached = connections.withLock { connections in
            cancelled.store(true, ordering: .releasing)
            defer { connections = [] }
            return connections
        }
        for connection in reached { connection.cancel(self) }
    }

    /// Notes that a request carrying it goes to `connection`.
    /// - Returns: `false` once cancelled: the request must not be sent.
    func attach(_ connection: APNSConnection) -> Bool {
        connections.withLock { connections in
            // Read under the lock `cancel()` sets it under: a request attached here is reached by that cancel, or
            // sees it.
            guard !cancelled.load(ordering: .acquiring) else { return false }
            if !connections.contains(where: { $0 === connection }) {
                // A bulk send outlives many connections (GOAWAY, closes): keep only the open ones.
                connections.removeAll { !$0.channel.isActive }
                connections.append(connection)
            }
            return true
        }
    }

    /// The answer of a request cancelled before it was written.
    static let beforeSending = APNSClientError(
        .cancelled, "The request was cancelled before it was sent: APNs never received it.")
    /// The answer of a request cancelled after it was written, its stream reset.
    static let whileWaiting = APNSClientError(
        .cancelled,
        "The request was cancelled while it waited for APNs's answer: its stream was reset, and APNs may or may not have received it."
    )
}
