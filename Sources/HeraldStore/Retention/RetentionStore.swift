public import Foundation

/// What retention deletes, one kind at a time (docs/storage.md, "Retention").
public enum RetentionKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The per-device outcomes of sends that finished before the cutoff. The sends keep their counts. Counted per
    /// device: a batch of first-try acceptances (or a period's partitions on PostgreSQL) counts the devices it held.
    case outcomes
    /// The delivery receipt events of sends that finished before the cutoff. The sends keep their receipt counts;
    /// reports about such a send are no longer counted.
    case receiptEvents = "receipt_events"
    /// Sends that finished before the cutoff, once their outcomes and receipt events are gone: with their shards and
    /// receipt counts.
    case sends
    /// Console sessions last used before the cutoff, and one-time sign-in links that expired before it.
    case consoleSessions = "console_sessions"
    /// Tokens taken out of sends (invalidated) before the cutoff, with their tag rows; and the preference choices and
    /// own quiet hours held by a token alone (no user, no installation) once that token is gone or was invalidated
    /// before the cutoff.
    case invalidatedTokens = "invalidated_tokens"
    /// Audit log entries made before the cutoff.
    case auditLog = "audit_log"

    public var description: String { rawValue }

    /// The kind in words, for logs.
    public var words: String {
        switch self {
        case .outcomes: "outcomes"
        case .receiptEvents: "receipt events"
        case .sends: "sends"
        case .consoleSessions: "console sessions"
        case .invalidatedTokens: "invalidated tokens"
        case .auditLog: "audit log entries"
        }
    }
}

/// What one batch of ``RetentionStore/deleteExpired(_:before:limit:)`` did.
public struct RetentionBatch: Sendable, Hashable {
    /// The rows deleted.
    public var deleted: Int
    /// Whether the batch found less to do than its limit allowed, so that nothing older than the cutoff is left (as
    /// far as this batch could see; another instance may hold the rest: see the PostgreSQL note of the protocol).
    public var finished: Bool

    public init(deleted: Int, finished: Bool) {
        self.deleted = deleted
        self.finished = finished
    }
}

/// Deletes what is older than the ages an operator keeps, a small batch at a time, so that no batch holds the
/// database long enough to stall sends or registrations.
///
/// On PostgreSQL each batch is a transaction that first tries a transaction-level advisory lock keyed by the schema:
/// while one instance deletes a batch, another instance's batch finds it taken and answers `finished` with nothing
/// deleted, leaving the work to the first. Devices are picked `FOR UPDATE SKIP LOCKED`, so a batch never waits for a
/// registration of one of them.
public protocol RetentionStore: Sendable {
    /// Deletes at most about `limit` rows of one kind older than `cutoff`, in one short transaction.
    ///
    /// A queued or running send's outcomes, receipt events and row are never deleted, whatever their age; a send's
    /// age is the time it finished (its last update).
    /// - Throws: ``StoreError`` when the database fails; nothing of the batch is deleted then.
    func deleteExpired(_ kind: RetentionKind, before cutoff: Date, limit: Int) async throws -> RetentionBatch

    /// Gives back to the file system at most about `maximumBytes` of the space deleted rows left free.
    ///
    /// SQLite with incremental auto-vacuum (every database created since schema 17) moves pages and shrinks the file
    /// at its next checkpoint. PostgreSQL reuses freed space itself (autovacuum), and answers 0.
    /// - Returns: The bytes given back (0 when nothing is free), or `nil` when the database cannot give space back
    ///   without a one-time `VACUUM` (a SQLite file created without incremental auto-vacuum).
    func reclaimSpace(maximumBytes: Int64) async throws -> Int64?

    /// Begins a new period of send records when the open one has lasted `length` (PostgreSQL: new partitions of the
    /// send records, which ``deleteExpired(_:before:limit:)`` of ``RetentionKind/outcomes`` drops whole once every
    /// send of their period finished before the cutoff; ``SendRecordPeriods``). SQLite keeps its records in one table:
    /// nothing to do. Another instance doing it at the same time leaves it to that one.
    /// - Returns: Whether a new period began.
    func rollSendRecordPeriod(every length: Duration) async throws -> Bool
}
