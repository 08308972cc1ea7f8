package import Foundation
package import HeraldCore

extension StoreSQL {
    /// An installation's start of an activity still to check (migration 32, `activity_starts`).
    package static func insertActivityStart(
        topic: String, activityID: String, installationID: UUID, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            INSERT INTO activity_starts (topic, activity_id, installation_id, started_at) \
            SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM activities WHERE topic = $1 AND id = $2 \
            AND start_send_id IS NOT NULL AND start_checked_at IS NULL) \
            ON CONFLICT (topic, activity_id, installation_id) DO NOTHING
            """,
            [.text(topic), .text(activityID), .text(installationID.uuidString.lowercased()),
             .integer(StoreTime.microseconds(now))])
    }

    /// Unchecked activities whose start send ended by a time, oldest first (`activities_start_unchecked`).
    package static func activityStartsDue(endedBy: Date, limit: Int, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT a.topic, a.id, a.start_send_id FROM activities a JOIN sends s ON s.id = a.start_send_id \
            WHERE a.start_send_id IS NOT NULL AND a.start_checked_at IS NULL \
            AND s.status IN ('completed', 'failed', 'cancelled') AND s.updated_at <= $1 \
            ORDER BY a.created_at, a.topic, a.id LIMIT $2
            """, [.integer(StoreTime.microseconds(endedBy)), .integer(Int64(limit))])
    }

    package static func startedInstallations(topic: String, activityID: String, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect, "SELECT installation_id FROM activity_starts WHERE topic = $1 AND activity_id = $2",
            [.text(topic), .text(activityID)])
    }

    /// The statements of a check's transaction: the claim (the activity's counts, answering it when it was unchecked),
    /// then the changes, then the statements that mark tokens stale (answering the tokens they marked).
    package struct StartCheckStatements {
        package var claim: SQLStatement
        package var changes: [SQLStatement]
        package var marksStale: [SQLStatement]
    }

    package static func recordStartCheck(_ check: StartCheck, at now: Date, _ dialect: SQLStatement.Dialect)
        -> StartCheckStatements
    {
        let time = SQLStatement.Value.integer(StoreTime.microseconds(now))
        let (topic, id) = (check.due.topic, check.due.activityID)
        let claim = SQLStatement(
            dialect,
            """
            UPDATE activities SET start_checked_at = $3, started = $4, not_started = $5 \
            WHERE topic = $1 AND id = $2 AND start_checked_at IS NULL RETURNING \(activityColumns)
            """,
            [.text(topic), .text(id), time, .integer(Int64(check.started.count)),
             .integer(Int64(check.notStarted.count))])
        var changes = [
            SQLStatement(
                dialect, "DELETE FROM activity_starts WHERE topic = $1 AND activity_id = $2", [.text(topic), .text(id)])
        ]
        let kind = TokenKind.liveActivityStart.name
        func each(_ tokens: [DeviceToken], _ size: Int, _ make: (inout SQLStatement, [DeviceToken]) -> String)
            -> [SQLStatement]
        {
            let sorted = tokens.sorted()
            return stride(from: 0, to: sorted.count, by: size).map { start in
                var statement = SQLStatement(dialect)
                statement.sql = make(&statement, Array(sorted[start..<min(start + size, sorted.count)]))
                return statement
            }
        }
        changes += each(check.started, DeviceQuery.tokenChunk) { statement, chunk in
            "UPDATE devices SET start_misses = 0 WHERE token IN (\(statement.bindList(chunk.map(\.hex)))) "
                + "AND token_kind = \(statement.bind(kind))"
        }
        changes += each(check.notStarted, DeviceQuery.tokenChunk) { statement, chunk in
            "UPDATE devices SET start_misses = start_misses + 1 WHERE token IN (\(statement.bindList(chunk.map(\.hex)))) "
                + "AND token_kind = \(statement.bind(kind))"
        }
        changes += each(check.notStarted, 500) { statement, chunk in
            let send = statement.bind(check.due.sendID.description)
            let rows = chunk.map { "(\(send), \(statement.bind($0.hex)))" }
            return "INSERT INTO push_to_start_misses (send_id, token) VALUES \(rows.joined(separator: ", ")) "
                + "ON CONFLICT (send_id, token) DO NOTHING"
        }
        let marksStale =
            check.staleAfter <= 0
            ? []
            : each(check.notStarted, DeviceQuery.tokenChunk) { statement, chunk in
                """
                UPDATE devices SET stale_at = \(statement.bind(time)), updated_at = \(statement.bind(time)) \
                WHERE token IN (\(statement.bindList(chunk.map(\.hex)))) AND token_kind = \(statement.bind(kind)) \
                AND start_misses >= \(statement.bind(.integer(Int64(check.staleAfter)))) AND stale_at IS NULL \
                RETURNING token
                """
            }
        return StartCheckStatements(claim: claim, changes: changes, marksStale: marksStale)
    }

    /// Whether a device's notification in a send started its activity: one row when the send started an activity
    /// (its check time, or NULL before the check; and whether the device missed).
    package static func startOutcome(of id: SendID, to token: DeviceToken, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            SELECT a.start_checked_at, (SELECT count(*) FROM push_to_start_misses m \
            WHERE m.send_id = $1 AND m.token = $2) FROM activities a WHERE a.start_send_id = $1
            """, [.text(id.description), .text(token.hex)])
    }
}

extension WebhookEventDraft {
    /// `token.stale` for a push-to-start token a check made stale.
    package static func event(ofStale token: DeviceToken, check: StartCheck, at now: Date) -> WebhookEventDraft {
        WebhookEventDraft(
            type: .tokenStale, app: check.due.topic, token: token, sendID: check.due.sendID,
            data: .object([
                "token": .string(token.hex), "activityId": .string(check.due.activityID),
                "sendId": .string(check.due.sendID.description), "missesInARow": .integer(check.staleAfter),
                "at": .string(RFC3339.string(now)),
            ]), at: now)
    }
}
