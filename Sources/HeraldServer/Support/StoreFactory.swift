public import HeraldCore
public import HeraldStore
public import Logging
import HeraldStorePostgres
import HeraldStoreSQLite

/// Opens the store a database URL names, for the server and the CLI.
public enum StoreFactory {
    /// Opens `sqlite:…` with ``HeraldStoreSQLite/SQLiteStore`` and `postgres://…`/`postgresql://…` with
    /// ``HeraldStorePostgres/PostgresStore``. Run the store's `run()` before using it, then `migrate()`.
    /// - Throws: ``HeraldStore/StoreError`` `.invalidURL` for another scheme; `.unavailable` when SQLite cannot open
    ///   the file.
    /// - Parameter logger: Where the store says what it did about the database (PostgreSQL: which host it uses).
    public static func open(url: String, clock: any WallClock = SystemWallClock(), logger: Logger? = nil) throws
        -> any Store
    {
        if url.hasPrefix("sqlite:") { return try SQLiteStore(url: url, clock: clock) }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return try PostgresStore(url: url, clock: clock, events: logger)
        }
        // Only the scheme is shown: a URL may carry a password.
        let scheme = url.firstIndex(of: ":").map { String(url[..<$0]) } ?? "(none)"
        throw StoreError(
            .invalidURL,
            "HERALD_DATABASE_URL has the scheme \(scheme): use sqlite://herald.sqlite or postgres://user:password@host/database."
        )
    }

    /// Rewrites a SQLite database once so that retention can shrink its file (incremental auto-vacuum): needed only
    /// for a database created before schema 17. It copies the whole file and holds the write lock meanwhile: stop
    /// the servers that use it first.
    /// - Returns: Whether the database was rewritten: `false` when it needed nothing; `nil` for PostgreSQL, which
    ///   reuses freed space itself.
    public static func vacuumForRetention(_ store: any Store) async throws -> Bool? {
        guard let sqlite = store as? SQLiteStore else { return nil }
        return try await sqlite.vacuumIncrementally()
    }
}
