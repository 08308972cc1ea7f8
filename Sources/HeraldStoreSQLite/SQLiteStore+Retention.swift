public import Foundation
import GRDB
import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func deleteExpired(_ kind: RetentionKind, before cutoff: Date, limit: Int) async throws -> RetentionBatch {
        let now = clock.now()
        // One write of the group commit: registrations that arrive meanwhile are committed right after it.
        return try await write("delete expired \(kind.words)") { db in
            var plan = RetentionBatchPlan(kind, before: cutoff, limit: limit, at: now, .sqlite)
            var rows: [SQLiteRow]?
            while let statement = try plan.next(rows) { rows = try db.rows(statement) }
            return plan.result
        }
    }

    /// SQLite keeps a send's records in one table: retention deletes them a send at a time (its first-try
    /// acceptances in one statement).
    public func rollSendRecordPeriod(every length: Duration) async throws -> Bool { false }

    public func reclaimSpace(maximumBytes: Int64) async throws -> Int64? {
        try await write("give free space back") { db -> Int64? in
            // 2: incremental. 0 (none) needs a VACUUM to change; 1 (full) gives pages back at each commit already.
            guard try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") == 2 else { return nil }
            let pageSize = Int64(try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
            let free = Int64(try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0)
            let pages = min(free, max(1, maximumBytes / pageSize))
            guard pages > 0 else { return 0 }
            // Moves pages from the end of the file into free ones: the file shrinks at the next checkpoint.
            try db.execute(sql: "PRAGMA incremental_vacuum(\(pages))")
            return pages * pageSize
        }
    }

    /// Makes a new database give freed space back (incremental auto-vacuum), before its first table: the mode of a
    /// database that has tables changes only with a `VACUUM` of the whole file, which ``vacuumIncrementally()`` does.
    func enableIncrementalVacuumIfNew() async throws {
        try ensureOpen()
        do {
            try await writer.writeWithoutTransaction { db in
                guard try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") != 2,
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") == 0
                else { return }
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                // Opening the file in WAL mode wrote its first page, which fixes the mode until a VACUUM: of an
                // empty database, instant.
                try db.execute(sql: "VACUUM")
            }
        } catch {
            throw Self.map(error, "turn on incremental auto-vacuum")
        }
    }

    /// Rewrites the whole database with incremental auto-vacuum, so that retention can shrink the file: a database
    /// created before Herald's schema 17 keeps reusing freed pages but never gives them back until this runs once.
    ///
    /// `VACUUM` copies every row: it takes about as long as reading the file, needs as much free disk again, and holds
    /// the write lock throughout. Run it with the server stopped (`herald vacuum`).
    /// - Returns: Whether the mode changed (`false` when it already was incremental).
    public func vacuumIncrementally() async throws -> Bool {
        try ensureOpen()
        do {
            return try await writer.writeWithoutTransaction { db in
                guard try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") != 2 else { return false }
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
                return true
            }
        } catch {
            throw Self.map(error, "vacuum the database")
        }
    }

    /// The database's auto-vacuum mode as `PRAGMA auto_vacuum` reads it: 0 none, 1 full, 2 incremental.
    package func autoVacuumMode() async throws -> Int {
        try await read("read the auto-vacuum mode") { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0 }
    }
}
