package import Foundation
package import HeraldCore

/// The console's statements, for both backends (see ``StoreSQL``).
extension StoreSQL {
    /// A UTC day in stored microseconds.
    private static let dayMicroseconds: Int64 = 86_400_000_000

    // MARK: Sessions

    /// Stores a session.
    package static func insertConsoleSession(_ session: ConsoleSession, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO console_sessions (id_hash, csrf_token, api_key_id, created_at, last_seen_at) \
            VALUES ($1, $2, $3, $4, $5)
            """,
            [
                .text(session.idHash), .text(session.csrfToken), .textOrNull(session.apiKey?.storedID),
                .integer(StoreTime.microseconds(session.createdAt)),
                .integer(StoreTime.microseconds(session.lastSeenAt)),
            ])
    }

    /// A session with its API key's columns (``apiKeyColumns``, all `NULL` for a link session); no row when the key
    /// was revoked.
    package static func selectConsoleSession(idHash: String, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        let keyColumns = apiKeyColumns.split(separator: ",").map { "k." + $0.trimmingCharacters(in: .whitespaces) }
        return SQLStatement(
            dialect,
            """
            SELECT s.id_hash, s.csrf_token, s.created_at, s.last_seen_at, s.api_key_id, \
            \(keyColumns.joined(separator: ", ")) FROM console_sessions s \
            LEFT JOIN api_keys k ON k.id = s.api_key_id \
            WHERE s.id_hash = $1 AND (s.api_key_id IS NULL OR (k.id IS NOT NULL AND k.revoked_at IS NULL))
            """, [.text(idHash)])
    }

    /// Moves a session's last activity.
    package static func touchConsoleSession(idHash: String, at date: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect, "UPDATE console_sessions SET last_seen_at = $2 WHERE id_hash = $1",
            [.text(idHash), .integer(StoreTime.microseconds(date))])
    }

    /// Deletes a session; returns it when it existed.
    package static func deleteConsoleSession(idHash: String, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "DELETE FROM console_sessions WHERE id_hash = $1 RETURNING id_hash", [.text(idHash)])
    }

    /// Deletes the sessions idle since a moment; returns them.
    package static func deleteConsoleSessions(lastSeenBefore date: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect, "DELETE FROM console_sessions WHERE last_seen_at < $1 RETURNING id_hash",
            [.integer(StoreTime.microseconds(date))])
    }

    /// Stores a one-time sign-in link.
    package static func insertSignInLink(
        tokenHash: String, expiresAt: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "INSERT INTO console_sign_in_links (token_hash, created_at, expires_at) VALUES ($1, $2, $3)",
            [.text(tokenHash), .integer(StoreTime.microseconds(now)), .integer(StoreTime.microseconds(expiresAt))])
    }

    /// Marks an unused, unexpired link used; returns it when it was usable. One statement, so two instances cannot
    /// both use it.
    package static func consumeSignInLink(tokenHash: String, at date: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            UPDATE console_sign_in_links SET used_at = $2 \
            WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING token_hash
            """, [.text(tokenHash), .integer(StoreTime.microseconds(date))])
    }

    // MARK: Overview

    /// Active devices counted by each dimension: rows of (dimension, name, count).
    package static func deviceStatistics(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        let dimensions = [
            ("topic", "topic"), ("environment", "environment"), ("kind", "token_kind"),
            ("platform", "coalesce(platform, '')"),
        ]
        let selects = dimensions.map { name, column in
            "SELECT '\(name)' AS dimension, \(column) AS name, count(*) AS n FROM devices "
                + "WHERE invalidated_at IS NULL GROUP BY \(column)"
        }
        return SQLStatement(dialect, selects.joined(separator: " UNION ALL ") + " ORDER BY 1, 3 DESC, 2")
    }

    /// Devices created per day since a moment: rows of (day number, count).
    package static func newDevicesPerDay(since date: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT created_at / \(dayMicroseconds) AS day, count(*) FROM devices WHERE created_at >= $1 \
            GROUP BY created_at / \(dayMicroseconds) ORDER BY 1
            """, [.integer(StoreTime.microseconds(date))])
    }

    /// Sends since a moment: one row of (sends, accepted, rejected, failed, received, opened, actions, dismissed).
    package static func sendTotals(since date: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT count(*), CAST(coalesce(sum(s.accepted), 0) AS BIGINT), \
            CAST(coalesce(sum(s.rejected), 0) AS BIGINT), CAST(coalesce(sum(s.failed), 0) AS BIGINT), \
            CAST(coalesce(sum(r.received), 0) AS BIGINT), CAST(coalesce(sum(r.opened), 0) AS BIGINT), \
            CAST(coalesce(sum(r.actions), 0) AS BIGINT), CAST(coalesce(sum(r.dismissed), 0) AS BIGINT) \
            FROM sends s LEFT JOIN send_receipts r ON r.send_id = s.id WHERE s.created_at >= $1
            """, [.integer(StoreTime.microseconds(date))])
    }

    /// Rejections since a moment by reason, most frequent first: rows of (reason, count, removed).
    package static func rejectionReasons(since date: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT coalesce(reason, ''), count(*), \
            CAST(sum(CASE WHEN action = 'removed' THEN 1 ELSE 0 END) AS BIGINT) \
            FROM send_outcomes WHERE outcome = 'rejected' AND at >= $1 \
            GROUP BY coalesce(reason, '') ORDER BY 2 DESC, 1
            """, [.integer(StoreTime.microseconds(date))])
    }

    /// Sends per day since a moment: rows of (day number, sends, accepted, rejected, failed).
    package static func sendsPerDay(since date: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT created_at / \(dayMicroseconds), count(*), CAST(sum(accepted) AS BIGINT), \
            CAST(sum(rejected) AS BIGINT), CAST(sum(failed) AS BIGINT) FROM sends WHERE created_at >= $1 \
            GROUP BY created_at / \(dayMicroseconds) ORDER BY 1
            """, [.integer(StoreTime.microseconds(date))])
    }

    /// The day a stored day number stands for.
    package static func day(_ number: Int64) -> Date { StoreTime.date(number * dayMicroseconds) }

    // MARK: Lists

    /// One page of sends, newest first (one row more than the limit).
    package static func recentSends(
        after cursor: SendListCursor?, limit: Int, topics: Set<String>? = nil, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(dialect)
        var conditions: [String] = []
        if let cursor {
            let createdAt = statement.bind(.integer(cursor.createdAt))
            let id = statement.bind(.text(cursor.id.description))
            conditions.append("(created_at < \(createdAt) OR (created_at = \(createdAt) AND id < \(id)))")
        }
        if let topics {
            // No app at all: a condition no row meets, rather than an empty IN list.
            let names = topics.sorted().map { statement.bind(.text($0)) }
            conditions.append(names.isEmpty ? "1 = 0" : "topic IN (\(names.joined(separator: ", ")))")
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let limitPlaceholder = statement.bind(.integer(Int64(limit + 1)))
        statement.sql = "SELECT \(liveSendColumns) FROM sends\(filter) ORDER BY created_at DESC, id DESC LIMIT \(limitPlaceholder)"
        return statement
    }

    /// A send's outcomes grouped: rows of (kind, reason, action, count); its batches are accepted outcomes with no
    /// reason or action. `acceptancesFromCounts` counts those as the send's accepted count less its accepted rows, in
    /// the same statement, instead of reading the batches (``ConsoleStore/outcomeGroups(of:acceptancesFromCounts:)``).
    package static func outcomeGroups(
        of id: SendID, acceptancesFromCounts: Bool, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        let batched =
            acceptancesFromCounts
            ? """
            SELECT 'accepted', NULL, NULL, \(liveCount("accepted")) - (SELECT count(*) FROM send_outcomes o \
            WHERE o.send_ref = sends.ref AND o.outcome = 'accepted') FROM sends WHERE id = $1
            """
            : """
            SELECT 'accepted', NULL, NULL, sum(count) FROM send_acceptances \
            WHERE send_ref = \(sendReference("$1")) HAVING count(*) > 0
            """
        return SQLStatement(
            dialect,
            """
            SELECT outcome, reason, action, CAST(sum(n) AS BIGINT) FROM (SELECT outcome, reason, action, count(*) AS n \
            FROM send_outcomes WHERE send_ref = \(sendReference("$1")) GROUP BY outcome, reason, action \
            UNION ALL \(batched)) g \
            GROUP BY outcome, reason, action HAVING sum(n) > 0 ORDER BY 4 DESC, 1, 2
            """, [.text(id.description)])
    }

    /// A device's latest outcomes: rows of ``selectedOutcomeColumns(_:alias:)`` then send id, target and summary.
    package static func deliveries(to token: DeviceToken, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            SELECT \(selectedOutcomeColumns(dialect, alias: "o.")), s.id, s.target, s.summary \
            FROM \(outcomesByToken(dialect, alias: "o")) JOIN sends s ON s.ref = o.send_ref \
            WHERE \(tokenIs("o.token", hex: "$1", suffixHex: "$3", dialect)) ORDER BY o.at DESC, s.id LIMIT $2
            """, [.text(token.hex), .integer(Int64(limit)), .text(suffixHex(token))])
    }

    /// Registrations whose token ends with hex digits. The suffix is checked to be hex before it gets here, so it
    /// holds no `LIKE` wildcard.
    /// A token's last 8 hex digits, as the index of migration 11 holds them: the same text in both dialects, so that
    /// both use the index.
    package static let tokenSuffixExpression = "substr(d.token, length(d.token) - 7)"

    package static func devices(withTokenSuffix suffix: String, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        // From 8 digits on, the last 8 go through the index of migration 11 and the whole suffix is checked on those
        // rows; fewer digits scan the registry.
        guard suffix.count >= 8 else {
            return SQLStatement(
                dialect, "SELECT \(DeviceQuery.columns) FROM devices d WHERE d.token LIKE $1 ORDER BY d.token LIMIT $2",
                [.text("%" + suffix), .integer(Int64(limit))])
        }
        return SQLStatement(
            dialect,
            """
            SELECT \(DeviceQuery.columns) FROM devices d WHERE \(tokenSuffixExpression) = $1 AND d.token LIKE $2 \
            ORDER BY d.token LIMIT $3
            """,
            [.text(String(suffix.suffix(8))), .text("%" + suffix), .integer(Int64(limit))])
    }
}

extension StoredRow {
    /// A session from ``StoreSQL/selectConsoleSession(idHash:_:)``.
    package func consoleSession() throws -> ConsoleSession {
        let key: APIKey? =
            try optionalText(4) == nil
            ? nil
            : try APIKey(
                storedID: text(5), name: text(6), scopes: text(7), prefix: text(8), createdAt: integer(9),
                revokedAt: optionalInteger(10), apps: text(11), environment: optionalText(12),
                expiresAt: optionalInteger(13), lastUsedAt: optionalInteger(14))
        return ConsoleSession(
            idHash: try text(0), csrfToken: try text(1), apiKey: key, createdAt: StoreTime.date(try integer(2)),
            lastSeenAt: StoreTime.date(try integer(3)))
    }

    /// A delivery from ``StoreSQL/deliveries(to:limit:_:)``.
    package func delivery() throws -> DeviceDelivery {
        guard let id = SendID(try text(12)) else {
            throw StoreError(.corruptRecord, "A stored send has an unreadable id: repair or delete the row.")
        }
        return DeviceDelivery(
            sendID: id, target: try text(13), summary: try text(14), outcome: try outcome(send: id).outcome)
    }

    /// An outcome group from ``StoreSQL/outcomeGroups(of:_:)``.
    package func outcomeGroup() throws -> OutcomeGroup {
        OutcomeGroup(
            kind: try text(0), reason: try optionalText(1),
            action: try optionalText(2).flatMap(DeliveryOutcome.Action.init(rawValue:)), count: Int(try integer(3)))
    }
}

extension DeviceStatistics {
    /// The statistics from the rows of ``StoreSQL/deviceStatistics(_:)``.
    package init(rows: [some StoredRow]) throws {
        self.init()
        for row in rows {
            let tally = Tally(try row.text(1), Int(try row.integer(2)))
            switch try row.text(0) {
            case "topic": byTopic.append(tally)
            case "environment": byEnvironment.append(tally)
            case "kind": byTokenKind.append(tally)
            default: byPlatform.append(tally)
            }
        }
    }
}

extension SendStatistics {
    /// The statistics from one row of ``StoreSQL/sendTotals(since:_:)`` and the rows of
    /// ``StoreSQL/rejectionReasons(since:_:)``.
    package init(totals: some StoredRow, reasons: [some StoredRow], limit: Int) throws {
        var removed = 0
        var tallies: [Tally] = []
        for row in reasons {
            removed += Int(try row.integer(2))
            tallies.append(Tally(try row.text(0), Int(try row.integer(1))))
        }
        self.init(
            sends: Int(try totals.integer(0)),
            counts: OutcomeCounts(
                accepted: Int(try totals.integer(1)), rejected: Int(try totals.integer(2)),
                failed: Int(try totals.integer(3))),
            removed: removed, topReasons: Array(tallies.prefix(limit)),
            receipts: ReceiptCounts(
                received: Int(try totals.integer(4)), opened: Int(try totals.integer(5)),
                actions: Int(try totals.integer(6)), dismissed: Int(try totals.integer(7))))
    }
}

extension DaySends {
    /// A day from a row of ``StoreSQL/sendsPerDay(since:_:)``.
    package init(row: some StoredRow) throws {
        self.init(
            day: StoreSQL.day(try row.integer(0)), sends: Int(try row.integer(1)),
            counts: OutcomeCounts(
                accepted: Int(try row.integer(2)), rejected: Int(try row.integer(3)), failed: Int(try row.integer(4))))
    }
}

extension SendListPage {
    /// The page from rows of ``StoreSQL/recentSends(after:limit:_:)`` (at most one more than the limit).
    package init(_ sends: [SendRecord], limit: Int) {
        let kept = Array(sends.prefix(limit))
        self.init(
            sends: kept,
            next: sends.count > limit
                ? kept.last.map { SendListCursor(createdAt: StoreTime.microseconds($0.createdAt), id: $0.id) } : nil)
    }
}
