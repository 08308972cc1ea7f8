import Foundation
public import HeraldCore
public import HeraldStore
public import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The backend for several server instances: PostgreSQL through a pool of connections (postgres-nio's
/// `PostgresClient`).
///
/// Writes are transactions that lock the rows they read (`SELECT … FOR UPDATE`), so instances can register,
/// invalidate and record concurrently; workers claim sends with `FOR UPDATE SKIP LOCKED`. Concurrent registrations
/// are stored together, one transaction per batch (``RegistrationGroupCommit``). Migrations run in one transaction
/// under an advisory lock, so instances that start together apply them once.
///
/// ```swift
/// let store = try PostgresStore(url: "postgres://herald:secret@127.0.0.1:5432/herald")
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { try await store.run() }   // the pool works only while run() runs
///     try await store.migrate()
///     …
///     group.cancelAll()
/// }
/// ```
public final class PostgresStore: Store, VersionedMigrations {
    /// What the store was created with.
    public let configuration: Configuration
    let client: PostgresClient
    let clock: any WallClock
    let logger: Logger
    /// Gathers concurrent registrations into one call; runs while ``run()`` runs.
    let registrations = RegistrationGroupCommit()
    private let closed = Mutex(false)

    /// The first key of `pg_advisory_xact_lock(int, int)` for migrations: the bytes of "hrld". The second is the
    /// schema's `hashtext`, so instances migrating one schema wait for each other, and other schemas do not wait.
    private static let migrationLock: Int32 = 0x68_72_6c_64

    /// Creates the store and its pool. No connection is opened until ``run()`` runs and a query needs one.
    /// - Parameters:
    ///   - configuration: Server, pool, schema and clock.
    ///   - logger: Where postgres-nio logs connection events; nothing by default. Herald never logs queries.
    public init(
        configuration: Configuration,
        logger: Logger = Logger(
            label: "herald.store",
            factory: { _ in
                SwiftLogNoOpLogHandler()
            })
    ) {
        var clientConfiguration = configuration.client
        if let schema = configuration.schema {
            clientConfiguration.options.additionalStartupParameters.append(("search_path", schema))
        }
        self.configuration = configuration
        self.client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        self.clock = configuration.clock
        self.logger = logger
    }

    /// Creates the store for a URL (`postgres://user:password@host:port/database`).
    public convenience init(url: String, clock: any WallClock = SystemWallClock()) throws {
        self.init(configuration: try Configuration(url: url, clock: clock))
    }

    // MARK: Lifecycle

    /// Runs the connection pool, and the group commit of registrations, until graceful shutdown or cancellation.
    /// Queries and registrations wait for it.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask {
                await self.registrations.run(
                    storeBatch: { try await self.storeRegistrations($0) },
                    storeOne: { try await self.storeRegistration($0) })
            }
            await client.run()
            group.cancelAll()
        }
        await close()
    }

    /// What the group commit of registrations did so far.
    package var registrationStatistics: RegistrationGroupCommit.Statistics { registrations.statistics }

    public func migrate() async throws {
        try await migrate(through: StoreSchema.latestVersion)
    }

    package func migrate(through version: Int) async throws {
        let now = StoreTime.microseconds(clock.now())
        let schema = configuration.schema
        do {
            try await transaction("apply migrations") { session in
                // The schema name was checked against [a-z][a-z0-9_]* when the configuration was made.
                try await session.execute(
                    "SELECT pg_advisory_xact_lock(\(Self.migrationLock), hashtext('\(schema ?? "public")'))")
                if let schema {
                    try await session.execute("CREATE SCHEMA IF NOT EXISTS \(schema)")
                }
                try await session.execute(StoreSchema.createMigrationsTable)
                let applied = Set(try await session.rows(StoreSchema.selectVersions).map { Int(try $0.integer(0)) })
                for migration in try Migration.pending(StoreSchema.migrations, applied: applied)
                where migration.version <= version {
                    for statement in migration.statements + migration.postgresStatements {
                        try await session.execute(statement)
                    }
                    try await session.execute(StoreSchema.recordMigration(migration, at: now, .postgres))
                }
            }
        } catch let error as StoreError where error.code == .backend {
            throw StoreError(
                .migrationFailed,
                "Migrating the PostgreSQL database failed and nothing was changed: \(error.message)",
                underlying: error.underlying)
        }
    }

    package func executeRaw(_ statements: [String]) async throws {
        try await transaction("run raw statements") { session in
            for statement in statements { try await session.execute(statement) }
        }
    }

    public func health() async throws -> StoreHealth {
        let version = try await session("check health") { session -> Int in
            let tables = try await session.rows(
                """
                SELECT count(*) FROM information_schema.tables \
                WHERE table_schema = current_schema() AND table_name = 'herald_migrations'
                """)
            guard try tables[0].integer(0) > 0 else { return 0 }
            return Int(try await session.rows("SELECT coalesce(max(version), 0) FROM herald_migrations")[0].integer(0))
        }
        return StoreHealth(backend: "postgres", schemaVersion: version, latestSchemaVersion: StoreSchema.latestVersion)
    }

    /// Refuses further calls. The pool's connections close when ``run()`` ends.
    public func close() async {
        closed.withLock { $0 = true }
    }

    // MARK: Access

    /// A connection leased for one operation, and the logger its queries use.
    struct Session {
        let connection: PostgresConnection
        let logger: Logger

        func rows(_ statement: SQLStatement) async throws -> [PostgresRandomAccessRow] {
            try await connection.rows(statement, logger: logger)
        }

        func rows(_ statement: SQLArrayStatement) async throws -> [PostgresRandomAccessRow] {
            try await connection.rows(statement, logger: logger)
        }

        func rows(_ sql: String) async throws -> [PostgresRandomAccessRow] {
            try await connection.rows(SQLStatement(.postgres, sql), logger: logger)
        }

        func execute(_ statement: SQLStatement) async throws {
            try await connection.execute(statement, logger: logger)
        }

        func execute(_ sql: String) async throws {
            try await connection.execute(SQLStatement(.postgres, sql), logger: logger)
        }
    }

    /// Runs a transaction on a pooled connection: committed when `body` returns, rolled back when it throws.
    func transaction<T: Sendable>(_ action: String, _ body: @escaping @Sendable (Session) async throws -> T)
        async throws -> T
    {
        try await leased(action) { client, logger, acquired in
            try await client.withTransaction(logger: logger) { connection in
                acquired()
                return try await body(Session(connection: connection, logger: logger))
            }
        }
    }

    /// Runs statements on a pooled connection outside a transaction (single statements).
    func session<T: Sendable>(_ action: String, _ body: @escaping @Sendable (Session) async throws -> T)
        async throws -> T
    {
        try await leased(action) { client, logger, acquired in
            try await client.withConnection { connection in
                acquired()
                return try await body(Session(connection: connection, logger: logger))
            }
        }
    }

    /// Runs an operation that leases a connection, failing it when no connection comes within the acquire timeout.
    ///
    /// postgres-nio queues a lease until a connection exists, retrying a server that is down for a minute before
    /// it gives up; a readiness probe and a registration must not wait that long. Once the connection is leased, the
    /// operation runs to its end.
    private func leased<T: Sendable>(
        _ action: String,
        _ operation:
            @escaping @Sendable (PostgresClient, Logger, _ acquired: @escaping @Sendable () -> Void)
            async throws -> T
    ) async throws -> T {
        try ensureOpen()
        let (client, logger, timeout) = (self.client, self.logger, configuration.acquireTimeout)
        let acquired = LeaseFlag()
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    try await operation(client, logger) { acquired.set() }
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                while let next = try await group.next() {
                    if let value = next {
                        group.cancelAll()
                        return value
                    }
                    if !acquired.isSet {
                        group.cancelAll()
                        throw StoreError(
                            .unavailable,
                            "PostgreSQL could not \(action): no connection within \(timeout). Check the database URL, that the server runs and accepts connections, or raise the pool size."
                        )
                    }
                }
                throw CancellationError()
            }
        } catch {
            throw Self.map(error, action)
        }
    }

    func ensureOpen() throws {
        if closed.withLock({ $0 }) {
            throw StoreError(.closed, "The PostgreSQL store was closed: create a new one.")
        }
    }

    static func map(_ error: any Error, _ action: String) -> any Error {
        if error is StoreError || error is CancellationError { return error }
        if let error = error as? PostgresTransactionError {
            return map(
                error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error, action)
        }
        guard let psql = error as? PSQLError else {
            return StoreError(.backend, "PostgreSQL could not \(action).", underlying: error)
        }
        if psql.code == .server, let message = psql.serverInfo?[.message] {
            let state = psql.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return StoreError(.backend, "PostgreSQL could not \(action): \(message)\(state).", underlying: error)
        }
        return StoreError(
            .unavailable,
            "PostgreSQL could not \(action): the server cannot be reached or closed the connection (\(psql.code)). Check the database URL, that the server runs, and that it accepts connections from this host.",
            underlying: error)
    }
}

/// Whether an operation got its connection; set from the pool's task, read by the timeout's.
private final class LeaseFlag: Sendable {
    private let value = Mutex(false)

    func set() { value.withLock { $0 = true } }

    var isSet: Bool { value.withLock { $0 } }
}
