public import Foundation
import HeraldCore
public import HeraldStore
import Logging
import PostgresNIO

extension PostgresStore {
    public func deleteExpired(_ kind: RetentionKind, before cutoff: Date, limit: Int) async throws -> RetentionBatch {
        let now = clock.now()
        var waitingForDrop: Range<Int64>?
        var dropped = 0
        if kind == .outcomes {
            // Whole periods first, each its own transaction; what still waits for a drop is left out of the rows.
            let periods = try await dropExpiredPeriods(before: StoreTime.microseconds(cutoff), at: now, dropped: &dropped)
            waitingForDrop = periods.rowsWaitingForDrop(before: StoreTime.microseconds(cutoff))
        }
        let schema = configuration.schema ?? "public"
        let waiting = waitingForDrop
        var batch = try await transaction("delete expired \(kind.words)") { session in
            // Another instance deletes a batch now: it goes on with the rest (see RetentionStore).
            guard try await session.rows(StoreSQL.tryRetentionLock(schema: schema))[0].integer(0) == 1 else {
                return RetentionBatch(deleted: 0, finished: true)
            }
            // A batch lost in a crash is deleted again by the next run: its commit need not wait for the WAL flush
            // that registrations and sends wait for.
            try await session.execute("SET LOCAL synchronous_commit = off")
            var plan = RetentionBatchPlan(kind, before: cutoff, limit: limit, at: now, waitingForDrop: waiting, .postgres)
            var rows: [PostgresRandomAccessRow]?
            while let statement = try plan.next(rows) { rows = try await session.rows(statement) }
            return plan.result
        }
        batch.deleted += dropped
        return batch
    }

    /// PostgreSQL's autovacuum makes deleted rows' space reusable by later rows; the files do not shrink.
    public func reclaimSpace(maximumBytes: Int64) async throws -> Int64? { 0 }

    public func rollSendRecordPeriod(every length: Duration) async throws -> Bool {
        let now = StoreTime.microseconds(clock.now())
        let schema = configuration.schema ?? "public"
        let opened = try await transaction("begin a period of send records") { session -> (Int64?, Bool)? in
            guard try await session.rows(StoreSQL.tryRetentionLock(schema: schema))[0].integer(0) == 1 else {
                return nil
            }
            let periods = try await Self.periods(in: session)
            switch periods.decision(now: now, every: length) {
            case .none:
                return (periods.open?.firstRef, false)
            case .start(let open, let length):
                for statement in StoreSQL.startSendRecordPeriods(open: open, length: length, at: now) {
                    try await session.execute(statement)
                }
                return (periods.open?.firstRef, false)
            case .roll(let closing, let next):
                for statement in StoreSQL.rollSendRecordPeriod(closing: closing, next: next) {
                    try await session.execute(statement)
                }
                return (next.firstRef, true)
            }
        }
        guard let (first, rolled) = opened else { return false }
        // After the commit: the sequence does not roll back, and a ref past every partition could not be recorded.
        // Done at every run, so that a crash between the two is mended by the next.
        if let first {
            _ = try await session("move send refs to the open period") { session in
                try await session.rows(StoreSQL.advanceSendRefs(to: first)).count
            }
        }
        return rolled
    }

    /// Drops the closed periods whose sends all finished before the cutoff; returns the periods left.
    private func dropExpiredPeriods(before cutoff: Int64, at now: Date, dropped: inout Int) async throws
        -> SendRecordPeriods
    {
        let schema = configuration.schema ?? "public"
        let periods = try await session("read the periods of send records") { try await Self.periods(in: $0) }
        var left = periods.periods
        for period in periods.droppable(before: cutoff) {
            do {
                let rows = try await transaction("drop a period of send records") { session -> Int? in
                    guard try await session.rows(StoreSQL.tryRetentionLock(schema: schema))[0].integer(0) == 1,
                        try await session.rows(StoreSQL.sendHoldingPeriod(period.refs, cutoff: cutoff)).isEmpty
                    else { return nil }
                    // Dropping a partition holds its table for a moment: it waits behind a running statement on it
                    // (a long read of outcomes) for a second at most, rather than stall the recordings queued behind.
                    try await session.execute("SET LOCAL lock_timeout = '1s'")
                    let rows = try await session.rows(StoreSQL.periodOutcomes(period))[0].integer(0)
                    for statement in StoreSQL.dropSendRecordPeriod(period, at: StoreTime.microseconds(now)) {
                        try await session.execute(statement)
                    }
                    return Int(rows)
                }
                guard let rows else { continue }
                dropped += rows
                left.removeAll { $0.number == period.number }
                logger.info(
                    "Retention dropped a period of send records whose sends all finished before the cutoff",
                    metadata: ["period": "\(period.number)", "outcomes": "\(rows)"])
            } catch let error as StoreError where error.code != .unavailable && error.code != .timedOut {
                // Most likely the lock's wait ran out: the period is dropped at the next run.
                logger.notice(
                    "Retention could not drop a period of send records now; it tries again at its next run",
                    metadata: ["period": "\(period.number)", "error": "\(error)"])
            }
        }
        return SendRecordPeriods(left)
    }

    private static func periods(in session: Session) async throws -> SendRecordPeriods {
        SendRecordPeriods(
            try await session.rows(StoreSQL.sendRecordPeriods).map { row in
                SendRecordPeriods.Period(
                    number: try row.integer(0), firstRef: try row.optionalInteger(1), endRef: try row.integer(2),
                    openedAt: try row.optionalInteger(3), closedAt: try row.optionalInteger(4),
                    length: try row.optionalInteger(5))
            })
    }
}
