public import Foundation
import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func deleteExpired(_ kind: RetentionKind, before cutoff: Date, limit: Int) async throws -> RetentionBatch {
        let now = clock.now()
        let schema = configuration.schema ?? "public"
        return try await transaction("delete expired \(kind.words)") { session in
            // Another instance deletes a batch now: it goes on with the rest (see RetentionStore).
            guard try await session.rows(StoreSQL.tryRetentionLock(schema: schema))[0].integer(0) == 1 else {
                return RetentionBatch(deleted: 0, finished: true)
            }
            // A batch lost in a crash is deleted again by the next run: its commit need not wait for the WAL flush
            // that registrations and sends wait for.
            try await session.execute("SET LOCAL synchronous_commit = off")
            var plan = RetentionBatchPlan(kind, before: cutoff, limit: limit, at: now, .postgres)
            var rows: [PostgresRandomAccessRow]?
            while let statement = try plan.next(rows) { rows = try await session.rows(statement) }
            return plan.result
        }
    }

    /// PostgreSQL's autovacuum makes deleted rows' space reusable by later rows; the files do not shrink.
    public func reclaimSpace(maximumBytes: Int64) async throws -> Int64? { 0 }
}
