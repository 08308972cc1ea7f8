import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// The `LISTEN`/`NOTIFY` channel of this schema's instances: instances of other schemas on the same database are
    /// not woken. PostgreSQL keeps 63 bytes of a channel's name; schema names are `[a-z][a-z0-9_]*`, so a longer one is
    /// cut, and two schemas that share those 63 bytes only wake each other for nothing.
    var workChannel: String { String(("herald_work" + (configuration.schema.map { "_" + $0 } ?? "")).prefix(63)) }

    /// Tells the other instances' workers, at the commit of the session's transaction (at once outside of one), that
    /// there may be work for them.
    func notifyWork(_ session: Session) async throws {
        try await session.execute(SQLStatement(.postgres, "SELECT pg_notify($1, '')", [.text(workChannel)]))
    }

    /// The smallest pool that spares a connection to listen on: the instance's lock holds one for good, and the
    /// store's operations need the others.
    static let smallestPoolToListen = 4

    public func watchForWork(_ wake: @escaping @Sendable () -> Void) async throws {
        // A pool this small keeps its connections for operations; the worker finds other instances' sends by polling.
        guard configuration.client.options.maximumConnections >= Self.smallestPoolToListen else { return }
        let channel = workChannel
        do {
            try await session("listen for other instances' work") { session in
                do {
                    try await session.connection.listen(on: channel) { notifications in
                        try await session.whileCallerWaits {
                            for try await _ in notifications { wake() }
                        }
                    }
                } catch {
                    throw Self.map(error, "listen for other instances' work")
                }
                // The stream ends when the caller is cancelled, and otherwise only when the connection does.
                try session.checkCallerCancelled()
                throw StoreError(
                    .unavailable,
                    "PostgreSQL stopped telling this instance of other instances' sends (the connection closed): it finds them at its next poll.")
            }
        } catch is CancellationError {
            // Cancelled: the watch is over, as asked.
        }
    }
}
