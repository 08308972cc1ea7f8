import Logging
import PostgresNIO
import Synchronization

/// A pool of one connection beside the store's pool, for the pulse and the silent-connection watch: its connection
/// is not stuck behind the store's work, and a client that got no answer is replaced rather than reused.
///
/// Replaced, because a client of postgres-nio's that lost its path waits longer after each failed connection attempt
/// (up to a minute), and its one connection may sit on a path gone silent: the next question must go out on a new
/// connection at once.
final class SpareClient: Sendable {
    private struct Running {
        let client: PostgresClient
        let task: Task<Void, Never>
    }

    private let configuration: PostgresClient.Configuration
    private let logger: Logger
    private let running = Mutex<Running?>(nil)

    /// - Parameter keepsConnection: Whether its connection is opened at once and kept (the pulse, asked often), or
    ///   opened on demand.
    init(
        configuration: PostgresClient.Configuration, connectTimeout: Duration, keepsConnection: Bool, logger: Logger
    ) {
        var own = configuration
        own.options.minimumConnections = keepsConnection ? 1 : 0
        own.options.maximumConnections = 1
        own.options.connectTimeout = connectTimeout
        own.options.keepAliveBehavior = nil
        self.configuration = own
        self.logger = logger
    }

    /// The client, started if it is not running.
    var client: PostgresClient {
        running.withLock { running in
            if let running { return running.client }
            let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
            // Detached: its run must see neither the caller's cancellation nor a graceful shutdown.
            running = Running(client: client, task: Task.detached { await client.run() })
            return client
        }
    }

    /// Stops the client without waiting for it (its connection's close may never end on a silent path); the next use
    /// starts a new one.
    func replace() {
        running.withLock { running in
            running?.task.cancel()
            running = nil
        }
    }
}
