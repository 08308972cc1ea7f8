import Foundation
package import HeraldCore

/// The statements of the delivery trace, for both backends.
extension StoreSQL {
    /// The columns of `delivery_attempts` after the send and token, in the order ``StoredRow/deliveryAttempt(token:)``
    /// reads them.
    private static let attemptColumns =
        "attempt, at, environment, connection, status, reason, message, apns_unique_id, retry_after_ms"

    /// Inserts the attempts of those outcomes that have any, in one statement; `nil` when none has (the usual case:
    /// the caller runs nothing). An attempt already stored for the send and device is kept.
    package static func insertAttempts(of id: SendID, _ outcomes: some Sequence<DeliveryOutcome>, _ dialect: SQLStatement.Dialect)
        -> SQLStatement?
    {
        var statement = SQLStatement(dialect)
        var rows: [String] = []
        for outcome in outcomes where !outcome.attempts.isEmpty {
            for attempt in outcome.attempts {
                let values: [SQLStatement.Value] = [
                    .text(id.description), .text(outcome.token.hex), .integer(Int64(attempt.number)),
                    .integer(StoreTime.microseconds(attempt.at)), .text(attempt.environment.name),
                    .integerOrNull(attempt.connection), .integerOrNull(attempt.status), .textOrNull(attempt.reason),
                    .textOrNull(attempt.message), .textOrNull(attempt.apnsUniqueID),
                    .integerOrNull(attempt.retryAfter.map(Self.milliseconds)),
                ]
                // A NULL is bound as text on PostgreSQL: the integer columns are cast.
                let integers: Set<Int> = [2, 3, 5, 6, 10]
                rows.append(
                    "("
                        + values.enumerated().map { index, value in
                            let placeholder = statement.bind(value)
                            return integers.contains(index) ? "CAST(\(placeholder) AS BIGINT)" : placeholder
                        }.joined(separator: ", ") + ")")
            }
        }
        guard !rows.isEmpty else { return nil }
        statement.sql = """
            INSERT INTO delivery_attempts (send_id, token, \(attemptColumns)) VALUES \(rows.joined(separator: ", ")) \
            ON CONFLICT (send_id, token, attempt) DO NOTHING
            """
        return statement
    }

    /// A device's outcome in a send: one row of ``selectedOutcomeColumns(_:alias:)``, or none.
    package static func outcome(of id: SendID, to token: DeviceToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT \(selectedOutcomeColumns(dialect)) FROM \(outcomesByToken(dialect)) \
            WHERE \(tokenIs("token", hex: "$2", suffixHex: "$3", dialect)) AND send_ref = \(sendReference("$1"))
            """,
            [.text(id.description), .text(token.hex), .text(suffixHex(token))])
    }

    /// A device's attempts in a send, first to last.
    package static func attempts(of id: SendID, to token: DeviceToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            "SELECT \(attemptColumns) FROM delivery_attempts WHERE send_id = $1 AND token = $2 ORDER BY attempt",
            [.text(id.description), .text(token.hex)])
    }

    /// A device's receipt events for a send, in the order they happened (of one instant: received, opened, action,
    /// dismissed, as a device reports them).
    package static func tracedReceipts(of id: SendID, to token: DeviceToken, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            SELECT kind, action, at, recorded_at FROM receipt_events WHERE send_id = $1 AND token = $2 \
            ORDER BY at, CASE kind WHEN 'received' THEN 0 WHEN 'opened' THEN 1 WHEN 'action' THEN 2 ELSE 3 END, action
            """,
            [.text(id.description), .text(token.hex)])
    }

    /// Deletes the attempts of some sends (retention: their outcomes are gone); returns nothing.
    package static func deleteAttempts(ofSends sends: [String], _ dialect: SQLStatement.Dialect) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let list = statement.bindList(sends)
        statement.sql = "DELETE FROM delivery_attempts WHERE send_id IN (\(list))"
        return statement
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

extension StoredRow {
    /// An attempt from the columns of `StoreSQL.attemptColumns`.
    package func deliveryAttempt() throws -> DeliveryAttempt {
        guard let environment = APNSEnvironment(name: try text(2)) else {
            throw StoreError(.corruptRecord, "A stored delivery attempt has an unknown environment.")
        }
        return DeliveryAttempt(
            number: Int(try integer(0)), at: StoreTime.date(try integer(1)), environment: environment,
            connection: try optionalInteger(3).map(Int.init), status: try optionalInteger(4).map(Int.init),
            reason: try optionalText(5), message: try optionalText(6), apnsUniqueID: try optionalText(7),
            retryAfter: try optionalInteger(8).map { .milliseconds($0) })
    }

    /// A receipt event from the columns of ``StoreSQL/tracedReceipts(of:to:_:)``.
    package func tracedReceipt() throws -> TracedReceipt {
        guard let kind = ReceiptEvent.Kind(rawValue: try text(0)) else {
            throw StoreError(.corruptRecord, "A stored receipt event has an unknown kind.")
        }
        let action = try text(1)
        return TracedReceipt(
            kind: kind, action: action.isEmpty ? nil : action, at: StoreTime.date(try integer(2)),
            recordedAt: StoreTime.date(try integer(3)))
    }
}
