import Foundation
import HeraldCore

/// How a batch of outcomes is recorded, the same on both backends (docs/storage.md, "Send records"): under the send's
/// (or shard's) lock, ``priorRead(_:)`` reads the send's last sequence number and what it recorded already among the
/// batch's tokens; ``resolve(_:)`` leaves those out (a send has one outcome per device) and splits the rest into
/// ``batches`` — first-try acceptances under the derived apns-id, one row per environment, token length, and whether
/// they have a sandbox unique id — and
/// ``rows``, every other outcome, numbered first; then the backend inserts both.
package struct OutcomeRecording: Sendable {
    /// The send.
    package let send: SendID
    /// The shard whose range of sequence numbers the outcomes take; `nil`: the send's own.
    package let shard: Int?
    private let outcomes: [DeliveryOutcome]
    /// Each outcome's token as bytes, turned from its digits once.
    private let tokenBytes: [[UInt8]]
    /// The outcomes that get a row each, numbered from ``firstSequence`` in this order.
    package private(set) var rows: [DeliveryOutcome] = []
    /// The first-try acceptances, numbered after the rows.
    package private(set) var batches: [(sequence: Int64, batch: AcceptedBatch)] = []
    /// The sequence number of the first row.
    package private(set) var firstSequence: Int64 = 1
    /// The outcomes recorded now, in rows or batches: not those of devices the send had already recorded (a batch
    /// recorded again after its commit's answer was lost, or a resumed send's). What their webhook events are for.
    package private(set) var recordedNow: [DeliveryOutcome] = []

    package init(_ outcomes: [DeliveryOutcome], of send: SendID, shard: Int? = nil) {
        var seen = Set<DeviceToken>()
        self.outcomes = outcomes.filter { seen.insert($0.token).inserted }
        tokenBytes = self.outcomes.map(\.token.bytes)
        self.send = send
        self.shard = shard
    }

    /// The devices of the batches.
    package var acceptedInBatches: Int { batches.reduce(0) { $0 + $1.batch.members.count } }

    /// The read to run under the lock: rows of (kind, last sequence, bytes, token length) — kind 0 the last sequence
    /// number of the send (or shard), then what it recorded among the outcomes' range of tokens
    /// (``StoreSQL/recordedTokens(send:_:into:)``, its batches in the outcomes' environments). `nil` when there is nothing to record.
    package func priorRead(_ dialect: SQLStatement.Dialect) -> SQLStatement? {
        guard !outcomes.isEmpty else { return nil }
        var statement = SQLStatement(dialect)
        let reference = StoreSQL.sendReference(statement.bind(.text(send.description)))
        // The range of sequence numbers bound, not written: one text for every send and shard, prepared once.
        let base = shard.map(StoreSQL.shardSequenceBase) ?? 0
        let (above, below) = (statement.bind(.integer(base)), statement.bind(.integer(base + (1 << 32))))
        let range = " AND seq > \(above) AND seq < \(below)"
        // The last sequence: the rows' greatest, read from the primary key's end, and the last batch's last member.
        let last = """
            SELECT coalesce(max(m), \(above)) FROM (SELECT max(seq) AS m FROM send_outcomes \
            WHERE send_ref = \(reference)\(range) UNION ALL SELECT m FROM (SELECT seq + count - 1 AS m \
            FROM send_acceptances WHERE send_ref = \(reference)\(range) ORDER BY seq DESC LIMIT 1) b) l
            """
        guard
            let recorded = StoreSQL.recordedTokens(
                send: reference, zip(tokenBytes, outcomes).map { ($0, $1.environment) }, into: &statement)
        else { return nil }
        statement.sql = "SELECT 0, (\(last)), NULL, CAST(NULL AS BIGINT) UNION ALL \(recorded)"
        return statement
    }

    /// Takes the rows of ``priorRead(_:)``: numbers what is left to record, and leaves out the devices recorded.
    package mutating func resolve(_ read: [some StoredRow]) throws {
        let recorded = try StoreSQL.recordedTokens(in: read)
        let last = try read.first { try $0.integer(0) == 0 }?.integer(1) ?? 0
        var grouped: [BatchKey: [(outcome: DeliveryOutcome, member: AcceptedBatch.Member)]] = [:]
        rows = []
        recordedNow = []
        for (outcome, bytes) in zip(outcomes, tokenBytes) {
            guard !recorded.contains(bytes) else { continue }
            recordedNow.append(outcome)
            guard let member = AcceptedBatch.member(outcome, bytes: bytes, of: send) else {
                rows.append(outcome)
                continue
            }
            let key = BatchKey(
                environment: outcome.environment.name, tokenLength: outcome.token.byteCount,
                keepsUniqueIDs: member.uniqueID != nil)
            grouped[key, default: []].append((outcome, member))
        }
        firstSequence = last + 1
        var next = firstSequence + Int64(rows.count)
        batches = []
        for key in grouped.keys.sorted() {
            let members = grouped[key]!
            let batch = AcceptedBatch(
                environment: members[0].outcome.environment, at: members.map(\.outcome.at).max()!,
                members: members.map(\.member))
            batches.append((next, batch))
            next += Int64(batch.members.count)
        }
    }

    /// The columns of `send_acceptances` after `send_ref`, in ``batchRows`` order.
    package static let batchColumns =
        "seq, count, at, token_length, first_token, last_token, environment, tokens, unique_ids"

    /// The type of each of ``batchColumns``.
    package static let batchColumnTypes: [SQLArrayStatement.ColumnType] = [
        .integer, .integer, .integer, .integer, .bytes, .bytes, .text, .bytes, .bytes,
    ]

    /// The values of each batch, in ``batchColumns`` order.
    package var batchRows: [[SQLStatement.Value]] {
        batches.map { sequence, batch in
            [
                .integer(sequence), .integer(Int64(batch.members.count)), .integer(StoreTime.microseconds(batch.at)),
                .integer(Int64(batch.tokenLength)), .bytes(batch.members.first!.bytes),
                .bytes(batch.members.last!.bytes), .text(batch.environment.name), .bytes(batch.storedTokens),
                batch.storedUniqueIDs.map { .bytes($0) } ?? .null,
            ]
        }
    }

    /// SQLite: the insert of the batches; `nil` when there are none. (PostgreSQL inserts them in the statement that
    /// counts them, ``StoreSQL/recordOutcomes(_:checkpoint:at:)``.)
    package func insertBatches(_ dialect: SQLStatement.Dialect) -> SQLStatement? {
        guard !batches.isEmpty else { return nil }
        var statement = SQLStatement(dialect)
        let reference = StoreSQL.sendReference(statement.bind(.text(send.description)))
        let values = batchRows.map { row in "(\(reference), \(row.map { statement.bind($0) }.joined(separator: ", ")))" }
        statement.sql = """
            INSERT INTO send_acceptances (send_ref, \(Self.batchColumns)) VALUES \(values.joined(separator: ", "))
            """
        return statement
    }

    private struct BatchKey: Hashable, Comparable {
        var environment: String
        var tokenLength: Int
        var keepsUniqueIDs: Bool

        static func < (lhs: BatchKey, rhs: BatchKey) -> Bool {
            (lhs.environment, lhs.tokenLength, lhs.keepsUniqueIDs ? 1 : 0)
                < (rhs.environment, rhs.tokenLength, rhs.keepsUniqueIDs ? 1 : 0)
        }
    }
}
