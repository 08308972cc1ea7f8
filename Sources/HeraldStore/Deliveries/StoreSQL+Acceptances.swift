import Foundation
package import HeraldCore

/// The statements that read ``AcceptedBatch``es (`send_acceptances`, migration 30), for both backends. A device is
/// found in a send's batches through the index `(send_ref, environment, last_token, first_token)`: the batches whose range holds its token, then
/// its position in their stored tokens, which the database finds (`instr`, `position`) without sending them.
extension StoreSQL {
    /// The 1-based position of a token (a placeholder of its bytes) in a batch's stored tokens; 0 when absent.
    package static func position(of token: String, in column: String, _ dialect: SQLStatement.Dialect) -> String {
        dialect == .sqlite ? "instr(\(column), \(token))" : "position(\(token) in \(column))"
    }

    /// The batches of a send (a `ref` expression) whose range holds a token, which is bound at `token` (its bytes) and
    /// `length` (their count): conditions on `send_acceptances` aliased `alias`.
    ///
    /// Each environment is named, so that the index `(send_ref, environment, last_token, first_token)` is read from the
    /// token on in each, and the first token is compared in the index, not in the row.
    private static func holding(
        _ token: String, length: String, send reference: String, alias: String
    ) -> String {
        let environments = APNSEnvironment.all.map { "'\($0.name)'" }.joined(separator: ", ")
        return """
            \(alias).send_ref = \(reference) AND \(alias).environment IN (\(environments)) \
            AND \(alias).last_token >= \(token) AND \(alias).first_token <= \(token) AND \(alias).token_length = \(length)
            """
    }

    /// That a send (a `ref` expression) has a token (bound at `token`, `length`) in a batch, at a token's start: a
    /// condition. (A match across two neighbouring tokens — possible only for someone who chose both — is not one.)
    static func accepted(_ token: String, length: String, send reference: String, _ dialect: SQLStatement.Dialect)
        -> String
    {
        let found = position(of: token, in: "a.tokens", dialect)
        return """
            EXISTS (SELECT 1 FROM send_acceptances a WHERE \(holding(token, length: length, send: reference, alias: "a")) \
            AND \(found) > 0 AND (\(found) - 1) % a.token_length = 0)
            """
    }

    /// A device's place in a send's batches: rows of (seq, at, environment, token length, position, the stored tokens
    /// when the position is not at a token's start, unique ids), for ``acceptedOutcome(of:send:rows:)``.
    package static func acceptance(of id: SendID, to token: DeviceToken, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        var statement = SQLStatement(dialect)
        let reference = sendReference(statement.bind(.text(id.description)))
        let bytes = statement.bind(.bytes(token.bytes))
        let length = statement.bind(.integer(Int64(token.byteCount)))
        statement.sql = """
            SELECT seq, at, environment, token_length, p, CASE WHEN (p - 1) % token_length <> 0 THEN tokens END, \
            unique_ids FROM (SELECT a.seq, a.at, a.environment, a.token_length, a.tokens, a.unique_ids, \
            \(position(of: bytes, in: "a.tokens", dialect)) AS p FROM send_acceptances a \
            WHERE \(holding(bytes, length: length, send: reference, alias: "a"))) found WHERE p > 0
            """
        return statement
    }

    /// The device's outcome from the rows of ``acceptance(of:to:_:)``, and its sequence number; `nil` when it is in
    /// none of the send's batches.
    package static func acceptedOutcome(of token: DeviceToken, send: SendID, rows: [some StoredRow]) throws
        -> (sequence: Int64, outcome: DeliveryOutcome)?
    {
        for row in rows {
            guard
                let index = try AcceptedBatch.index(
                    of: token, position: row.integer(4), tokenLength: row.integer(3), stored: row.optionalBytes(5))
            else { continue }
            guard let environment = APNSEnvironment(name: try row.text(2)) else {
                throw StoreError(.corruptRecord, "A stored batch of accepted devices has an unknown environment.")
            }
            let outcome = AcceptedBatch.outcome(
                of: token, send: send, environment: environment, at: StoreTime.date(try row.integer(1)),
                uniqueID: try AcceptedBatch.uniqueID(at: index, stored: row.optionalBytes(6)))
            return (try row.integer(0) + Int64(index), outcome)
        }
        return nil
    }

    /// How many of the latest sends the console's page of a device looks through for the batches it is in (its
    /// exceptions are found by token, whatever their send's age).
    package static let deliveriesSendsLookedThrough = 500

    /// A device's latest deliveries in batches, among the latest ``deliveriesSendsLookedThrough`` sends of its app
    /// and of none (of any app, when the device is no longer registered): rows of (send id, target, summary, seq, at,
    /// environment, token length, position, stored tokens when the position is not at a token's start, unique ids),
    /// for ``batchDeliveries(of:rows:)``.
    package static func batchDeliveries(to token: DeviceToken, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        var statement = SQLStatement(dialect)
        let hex = statement.bind(.text(token.hex))
        let bytes = statement.bind(.bytes(token.bytes))
        let length = statement.bind(.integer(Int64(token.byteCount)))
        let looked = statement.bind(.integer(Int64(deliveriesSendsLookedThrough)))
        let limitPlaceholder = statement.bind(.integer(Int64(limit)))
        statement.sql = """
            SELECT id, target, summary, seq, at, environment, token_length, p, \
            CASE WHEN (p - 1) % token_length <> 0 THEN tokens END, unique_ids FROM (SELECT s.id, s.target, s.summary, \
            a.seq, a.at, a.environment, a.token_length, a.tokens, a.unique_ids, \
            \(position(of: bytes, in: "a.tokens", dialect)) AS p \
            FROM (SELECT ref, id, target, summary FROM sends WHERE topic IS NULL \
            OR topic = coalesce((SELECT topic FROM devices WHERE token = \(hex)), topic) \
            ORDER BY created_at DESC LIMIT \(looked)) s \
            JOIN send_acceptances a ON \(holding(bytes, length: length, send: "s.ref", alias: "a"))) found \
            WHERE p > 0 ORDER BY at DESC, id LIMIT \(limitPlaceholder)
            """
        return statement
    }

    /// The deliveries from the rows of ``batchDeliveries(to:limit:_:)``.
    package static func batchDeliveries(of token: DeviceToken, rows: [some StoredRow]) throws -> [DeviceDelivery] {
        try rows.compactMap { row in
            guard
                let index = try AcceptedBatch.index(
                    of: token, position: row.integer(7), tokenLength: row.integer(6), stored: row.optionalBytes(8))
            else { return nil }
            guard let id = SendID(try row.text(0)), let environment = APNSEnvironment(name: try row.text(5)) else {
                throw StoreError(.corruptRecord, "A stored send or batch of accepted devices is unreadable.")
            }
            return DeviceDelivery(
                sendID: id, target: try row.text(1), summary: try row.text(2),
                outcome: AcceptedBatch.outcome(
                    of: token, send: id, environment: environment, at: StoreTime.date(try row.integer(4)),
                    uniqueID: try AcceptedBatch.uniqueID(at: index, stored: row.optionalBytes(9))))
        }
    }

    /// A device's deliveries from its rows and its batches, latest first (as ``deliveries(to:limit:_:)`` orders them).
    package static func latest(_ deliveries: [DeviceDelivery], limit: Int) -> [DeviceDelivery] {
        Array(
            deliveries.sorted {
                ($0.outcome.at, $1.sendID.description) > ($1.outcome.at, $0.sendID.description)
            }.prefix(limit))
    }

    /// The union branches that read what a send (a `ref` expression) recorded among some tokens: rows of (kind, NULL,
    /// bytes, token length) — kind 1 a batch whose range meets theirs (its stored tokens), 2 the token of an outcome row
    /// in their range. Read with ``recordedTokens(in:)``.
    ///
    /// By environment, when one is given, the batches: a send walks one environment after the other, and the tokens
    /// of the two interleave, so every batch of the first would meet the range of every recording of the second. A
    /// token belongs to one environment (APNs mints it for one), so the batches of the other cannot hold it; the rows,
    /// few, are read whatever their environment.
    static func recordedTokens(
        send reference: String, _ tokens: [(bytes: [UInt8], environment: APNSEnvironment?)],
        into statement: inout SQLStatement
    ) -> String? {
        guard let (low, high) = byteRange(of: tokens.map(\.bytes)) else { return nil }
        let rowsByToken =
            statement.dialect == .sqlite ? "send_outcomes INDEXED BY send_outcomes_send_token" : "send_outcomes"
        let (lowest, highest) = (statement.bind(.bytes(low)), statement.bind(.bytes(high)))
        var branches = [
            """
            SELECT 2, NULL, token, CAST(NULL AS BIGINT) FROM \(rowsByToken) \
            WHERE send_ref = \(reference) AND token >= \(lowest) AND token <= \(highest)
            """
        ]
        // One branch per environment whether or not the tokens have one there (its range `NULL`), so that the text
        // is the same for every recording: PostgreSQL prepares it once per connection (`PreparedShapes`).
        let environments: [APNSEnvironment?] =
            tokens.contains { $0.environment == nil } ? [nil] : APNSEnvironment.all.sorted { $0.name < $1.name }
        for environment in environments {
            let range = byteRange(of: tokens.filter { environment == nil || $0.environment == environment }.map(\.bytes))
            let from = statement.bind(range.map { .bytes($0.low) } ?? .null)
            let through = statement.bind(range.map { .bytes($0.high) } ?? .null)
            let inEnvironment = environment.map { " AND environment = \(statement.bind(.text($0.name)))" } ?? ""
            branches.append(
                """
                SELECT 1, NULL, tokens, token_length FROM send_acceptances \
                WHERE send_ref = \(reference) AND last_token >= \(from) AND first_token <= \(through)\(inEnvironment)
                """)
        }
        return branches.joined(separator: " UNION ALL ")
    }

    /// The tokens in rows of kind 1 and 2 of ``recordedTokens(send:_:into:)``; other rows are passed over.
    package static func recordedTokens(in rows: [some StoredRow]) throws -> RecordedTokens {
        var recorded = RecordedTokens()
        for row in rows {
            switch try row.integer(0) {
            case 1: recorded.batches.append(try AcceptedBatch.StoredTokens(row.bytes(2), tokenLength: Int(row.integer(3))))
            case 2: recorded.rows.insert(try row.bytes(2))
            default: continue
            }
        }
        return recorded
    }

    /// What a send recorded among the range of some tokens, in either environment (``recordedTokens(in:)`` reads
    /// it); `nil` for no tokens.
    package static func recordedTokens(of id: SendID, among tokens: [DeviceToken], _ dialect: SQLStatement.Dialect)
        -> SQLStatement?
    {
        var statement = SQLStatement(dialect)
        let reference = sendReference(statement.bind(.text(id.description)))
        guard let sql = recordedTokens(send: reference, tokens.map { ($0.bytes, nil) }, into: &statement) else {
            return nil
        }
        statement.sql = sql
        return statement
    }

    /// The lowest and highest of some tokens' bytes.
    static func byteRange(of bytes: [[UInt8]]) -> (low: [UInt8], high: [UInt8])? {
        guard let low = bytes.min(by: { $0.lexicographicallyPrecedes($1) }),
            let high = bytes.max(by: { $0.lexicographicallyPrecedes($1) })
        else { return nil }
        return (low, high)
    }

    /// Deletes the batches of some sends (retention, with the last of their outcome rows); returns nothing.
    package static func deleteAcceptances(ofSends sends: [String], _ dialect: SQLStatement.Dialect) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let list = statement.bindList(sends)
        statement.sql = """
            DELETE FROM send_acceptances WHERE send_ref IN (SELECT ref FROM sends WHERE id IN (\(list))) RETURNING count
            """
        return statement
    }
}

/// What a send recorded in a range of tokens (``StoreSQL/recordedTokens(in:)``): the tokens of its rows, and its
/// batches' stored tokens, searched where they are rather than read into tokens (a recording reads the batches its
/// range meets, often thousands of devices, to check a few).
package struct RecordedTokens: Sendable {
    var rows: Set<[UInt8]> = []
    var batches: [AcceptedBatch.StoredTokens] = []

    /// Those of some tokens that are recorded.
    package func filter(_ tokens: [DeviceToken]) -> Set<DeviceToken> {
        Set(tokens.filter { contains($0.bytes) })
    }

    /// Whether a token (its bytes) is recorded.
    package func contains(_ token: [UInt8]) -> Bool {
        rows.contains(token) || batches.contains { $0.contains(token) }
    }
}

/// One page of a send's outcomes, from its rows and its batches, as statements both backends run in order
/// (``DeliveryStore/outcomes(of:after:limit:)``): ``rowsRead`` and ``batchesRead``, then ``tokensRead(rows:batches:)``
/// for the batches the page needs, then ``page(rows:batches:tokens:)``. Members of a batch are numbered from its
/// sequence number in their tokens' order.
package struct OutcomePageRead: Sendable {
    private let send: SendID
    private let after: Int64
    private let limit: Int

    package init(of send: SendID, after cursor: OutcomeCursor?, limit: Int) {
        self.send = send
        after = cursor?.sequence ?? 0
        self.limit = max(1, limit)
    }

    /// The rows after the cursor (one more than the limit): ``StoreSQL/outcomes(of:after:limit:_:)``.
    package func rowsRead(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        StoreSQL.outcomes(of: send, after: OutcomeCursor(sequence: after), limit: limit, dialect)
    }

    /// The batches with members after the cursor, by sequence (as many as the page could need): rows of (seq, count).
    package func batchesRead(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let reference = StoreSQL.sendReference(statement.bind(.text(send.description)))
        let cursor = statement.bind(.integer(after))
        let count = statement.bind(.integer(Int64(limit + 1)))
        // The batch the cursor is inside, if any, and those after it.
        statement.sql = """
            SELECT seq, count FROM (SELECT seq, count FROM send_acceptances WHERE send_ref = \(reference) \
            AND seq <= \(cursor) ORDER BY seq DESC LIMIT 1) straddling WHERE seq + count - 1 > \(cursor) \
            UNION ALL SELECT seq, count FROM (SELECT seq, count FROM send_acceptances WHERE send_ref = \(reference) \
            AND seq > \(cursor) ORDER BY seq LIMIT \(count)) later
            """
        return statement
    }

    /// The batches the page takes members from, given the two reads: their sequence numbers.
    private func needed(rows: [Int64], batches: [(sequence: Int64, count: Int64)]) -> [Int64] {
        // Members and rows merged by sequence until one more than the limit is reached.
        var taken = 0
        var rowIndex = 0
        var needed: [Int64] = []
        for batch in batches.sorted(by: { $0.sequence < $1.sequence }) {
            while rowIndex < rows.count, rows[rowIndex] < batch.sequence, taken <= limit {
                taken += 1
                rowIndex += 1
            }
            guard taken <= limit else { break }
            needed.append(batch.sequence)
            let first = max(batch.sequence, after + 1)
            let members = batch.sequence + batch.count - first
            // Rows numbered inside a batch's range do not exist (a recording numbers its rows, then its batches).
            taken += Int(members)
        }
        return needed
    }

    /// The stored tokens of the batches the page needs: rows of (seq, at, environment, token length, tokens, unique
    /// ids); `nil`
    /// when it needs none.
    package func tokensRead(rows: [some StoredRow], batches: [some StoredRow], _ dialect: SQLStatement.Dialect) throws
        -> SQLStatement?
    {
        let sequences = try needed(
            rows: rows.map { try $0.integer(0) }, batches: batches.map { (try $0.integer(0), try $0.integer(1)) })
        guard !sequences.isEmpty else { return nil }
        var statement = SQLStatement(dialect)
        let reference = StoreSQL.sendReference(statement.bind(.text(send.description)))
        let list = sequences.map { statement.bind(.integer($0)) }.joined(separator: ", ")
        statement.sql = """
            SELECT seq, at, environment, token_length, tokens, unique_ids FROM send_acceptances \
            WHERE send_ref = \(reference) \
            AND seq IN (\(list))
            """
        return statement
    }

    /// The page.
    package func page(rows: [some StoredRow], tokens: [some StoredRow]) throws -> OutcomePage {
        var numbered = try rows.map { try $0.outcome(send: send) }
        for row in tokens {
            guard let environment = APNSEnvironment(name: try row.text(2)) else {
                throw StoreError(.corruptRecord, "A stored batch of accepted devices has an unknown environment.")
            }
            let first = try row.integer(0)
            let at = StoreTime.date(try row.integer(1))
            let members = try AcceptedBatch.tokens(stored: row.bytes(4), tokenLength: Int(try row.integer(3)))
            let uniqueIDs = try row.optionalBytes(5)
            for (index, token) in members.enumerated() where first + Int64(index) > after {
                let outcome = AcceptedBatch.outcome(
                    of: token, send: send, environment: environment, at: at,
                    uniqueID: try AcceptedBatch.uniqueID(at: index, stored: uniqueIDs))
                numbered.append((first + Int64(index), outcome))
            }
        }
        numbered.sort { $0.sequence < $1.sequence }
        return OutcomePage(Array(numbered.prefix(limit + 1)), limit: limit)
    }
}
