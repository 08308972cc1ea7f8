import Foundation
import GRDB
public import HeraldCore
public import HeraldStore
import ServiceLifecycle
import Synchronization

/// The embedded backend: one SQLite file, in WAL mode, written by one connection and read by several.
///
/// Every write is one transaction (or a savepoint of a group commit) on GRDB's writer queue, off the Swift
/// concurrency pool; reads run on reader
/// connections concurrently with it. Commits are durable (`synchronous = FULL`) unless the configuration chooses
/// `NORMAL`. Several processes may open the same file: SQLite's lock serializes their writes, and a busy timeout
/// makes them wait rather than fail.
///
/// ```swift
/// let store = try SQLiteStore(configuration: .init(url: "sqlite:///var/lib/herald/herald.sqlite"))
/// try await store.migrate()
/// ```
public final class SQLiteStore: Store, VersionedMigrations {
    /// What the store was opened with.
    public let configuration: Configuration
    let writer: any DatabaseWriter
    package let clock: any WallClock
    let writes: GroupCommit
    /// `nil` for an in-memory database: its one connection is the writer's.
    let quickReaders: QuickReaders?
    private let closed = Mutex(false)

    /// Opens (or creates) the database. Call ``migrate()`` before using it.
    /// - Throws: ``HeraldStore/StoreError`` `.unavailable` when the file cannot be opened or is not a database.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.clock = configuration.clock
        var options = GRDB.Configuration()
        options.foreignKeysEnabled = true
        options.busyMode = .timeout(Self.seconds(configuration.busyTimeout))
        options.maximumReaderCount = max(1, configuration.maximumReaderCount)
        options.label = "herald"
        let synchronous = configuration.synchronous.rawValue
        options.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // The journals of savepoints and statements (every group-committed write has a savepoint) in memory, not in
            // temporary files: they hold a write's pages only until it ends, and as files they cost a system call per
            // page, a fifth of a fan-out's time.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            db.add(function: HexFunction.unhex)
        }
        do {
            if let path = configuration.location.path {
                // DatabasePool switches the file to WAL mode, and sets its writer to synchronous NORMAL when it does,
                // after `prepareDatabase`: the level configured is set again here.
                let pool = try DatabasePool(path: path, configuration: options)
                try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
                writer = pool
                quickReaders = QuickReaders(path: path, configuration: options, limit: options.maximumReaderCount)
            } else {
                writer = try DatabaseQueue(configuration: options)
                quickReaders = nil
            }
        } catch {
            throw StoreError(
                .unavailable,
                "Cannot open the SQLite database at \(configuration.location): \(Self.reason(error)). Check that the folder exists and is writable.",
                underlying: error)
        }
        writes = GroupCommit(writer: writer)
    }

    /// Opens the database a URL names (`sqlite:///path/to/herald.sqlite`, `sqlite::memory:`).
    public convenience init(url: String, clock: any WallClock = SystemWallClock()) throws {
        try self.init(configuration: Configuration(url: url, clock: clock))
    }

    // MARK: Lifecycle

    /// Waits for graceful shutdown or cancellation, then closes the database.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    public func migrate() async throws {
        try await migrate(through: StoreSchema.latestVersion)
    }

    package func migrate(through version: Int) async throws {
        let now = StoreTime.microseconds(clock.now())
        try await enableIncrementalVacuumIfNew()
        do {
            try await write("apply migrations") { db in
                try db.execute(sql: StoreSchema.createMigrationsTable)
                let applied = Set(try Int64.fetchAll(db, sql: StoreSchema.selectVersions).map(Int.init))
                for migration in try Migration.pending(StoreSchema.migrations, applied: applied)
                where migration.version <= version {
                    for statement in migration.statements + migration.sqliteStatements { try db.execute(sql: statement) }
                    try db.execute(StoreSchema.recordMigration(migration, at: now, .sqlite))
                }
            }
        } catch let error as StoreError where error.code == .backend {
            throw StoreError(
                .migrationFailed,
                "Migrating the SQLite database failed and nothing was changed: \(error.message)",
                underlying: error.underlying)
        }
    }

    /// A setting of the writer connection, as `PRAGMA <name>` reads it (`synchronous`: 1 for NORMAL, 2 for FULL).
    package func writerPragma(_ name: String) async throws -> Int {
        try await write("read a setting") { db in try Int.fetchOne(db, sql: "PRAGMA \(name)") ?? -1 }
    }

    package func rowCounts() async throws -> [String: Int] {
        try await read("count rows") { db in
            var counts: [String: Int] = [:]
            for table in try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            {
                counts[table] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \"\(table)\"") ?? 0
            }
            return counts
        }
    }

    package func executeRaw(_ statements: [String]) async throws {
        try await write("run raw statements") { db in
            for statement in statements { try db.execute(sql: statement) }
        }
    }

    public func health() async throws -> StoreHealth {
        let version = try await read("check health") { db -> Int in
            guard try db.tableExists("herald_migrations") else { return 0 }
            return try Int.fetchOne(db, sql: "SELECT coalesce(max(version), 0) FROM herald_migrations") ?? 0
        }
        return StoreHealth(backend: "sqlite", schemaVersion: version, latestSchemaVersion: StoreSchema.latestVersion)
    }

    public func close() async {
        guard
            closed.withLock({ closed in
                defer { closed = true }
                return !closed
            })
        else { return }
        // GRDB closes the writer before the readers, and SQLite deletes the -wal and -shm files only when the last
        // connection to close can checkpoint: a read-only one cannot. Dropping the idle readers first leaves the
        // writer last (GRDB issue 739).
        quickReaders?.close()
        (writer as? DatabasePool)?.invalidateReadOnlyConnections()
        try? writer.close()
    }

    // MARK: Instance lock

    /// The databases whose instance lock a store of this process holds (``withInstanceLock(_:_:)``).
    static let heldDatabases = Mutex<Set<String>>([])

    /// What the instance lock is keyed by: the database file's full path, or this store for an in-memory database.
    var databaseLockKey: String {
        guard let path = configuration.location.path else { return "memory:\(ObjectIdentifier(self))" }
        return URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    // MARK: Access

    /// Runs a write on the writer queue, committed with the writes that arrive meanwhile (``GroupCommit``): durable
    /// when it returns, and rolled back alone if it throws.
    func write<T: Sendable>(_ action: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try ensureOpen()
        do {
            return try await writes.perform(body)
        } catch {
            throw Self.map(error, action)
        }
    }

    /// Runs a read on a reader connection, which sees the last committed state.
    func read<T: Sendable>(_ action: String, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try ensureOpen()
        do {
            return try await writer.read(body)
        } catch {
            throw Self.map(error, action)
        }
    }

    /// The rows of one short statement (a read by key), read on the calling thread by a ``QuickReaders`` connection
    /// when one is free, else through the pool like ``read(_:_:)``.
    func quickRows(_ action: String, _ statement: SQLStatement) async throws -> [SQLiteRow] {
        try ensureOpen()
        do {
            if let rows = try quickReaders?.rows(statement) { return rows }
        } catch {
            throw Self.map(error, action)
        }
        return try await read(action) { db in try db.rows(statement) }
    }

    func ensureOpen() throws {
        if closed.withLock({ $0 }) {
            throw StoreError(.closed, "The SQLite store was closed: open a new one.")
        }
    }

    static func map(_ error: any Error, _ action: String) -> any Error {
        if error is StoreError || error is CancellationError { return error }
        // GRDB interrupts the statement of an access whose task is cancelled; the store runs its statements through
        // SQLite's C API (Row+StoredRow.swift), so the interruption arrives as SQLite's error, not GRDB's
        // CancellationError.
        if (error as? DatabaseError)?.resultCode == .SQLITE_INTERRUPT { return CancellationError() }
        let (code, advice): (StoreError.Code, String) =
            switch (error as? DatabaseError)?.resultCode.primaryResultCode {
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                (.unavailable, "Another process held the write lock past the busy timeout: raise it, or find that process.")
            case .SQLITE_FULL:
                (.diskFull, "The disk under the database is full: free space; nothing of this write was stored.")
            case .SQLITE_IOERR:
                (.unavailable, "The disk failed to read or write: check it and its free space.")
            default:
                (.backend, "Check that the database file is writable and the disk is not full.")
            }
        return StoreError(code, "SQLite could not \(action): \(reason(error)). " + advice, underlying: error)
    }

    /// SQLite's own message, which names no bound value.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? DatabaseError else { return "an unexpected error" }
        return error.message ?? "error \(error.resultCode.rawValue)"
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
