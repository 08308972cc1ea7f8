/// The statements of retention, for both backends (see ``StoreSQL`` and ``RetentionBatchPlan``).
extension StoreSQL {
    /// The statuses of a send that has finished: its outcomes, events and row may go once old enough.
    static let finishedStatuses = "status IN ('completed', 'failed', 'cancelled')"

    /// The column that marks a send whose rows of a kind are deleted, the table and key of those rows, and how a row
    /// names its send: by id, or by `ref` (outcomes, migration 27).
    private static func perSend(_ kind: RetentionKind)
        -> (mark: String, table: String, key: String, owner: (column: String, sendColumn: String))
    {
        switch kind {
        case .receiptEvents:
            ("receipts_deleted_at", "receipt_events", "send_id, token, kind, action", ("send_id", "id"))
        default: ("outcomes_deleted_at", "send_outcomes", "send_ref, seq", ("send_ref", "ref"))
        }
    }

    /// The oldest finished sends (by the time they finished) that still have rows of a kind, finished before a moment:
    /// their ids, from the partial index of such sends (migration 17).
    /// `excluding`: the refs of sends whose outcomes wait for their period's drop (``SendRecordPeriods``).
    static func sendsKeeping(
        _ kind: RetentionKind, finishedBefore cutoff: Int64, limit: Int, excluding refs: Range<Int64>?,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let cutoffPlaceholder = statement.bind(.integer(cutoff))
        var waiting = ""
        if let refs {
            waiting = " AND NOT (ref >= \(statement.bind(.integer(refs.lowerBound)))"
                + " AND ref < \(statement.bind(.integer(refs.upperBound))))"
        }
        let limitPlaceholder = statement.bind(.integer(Int64(limit)))
        statement.sql = """
            SELECT id FROM sends WHERE \(perSend(kind).mark) IS NULL AND \(finishedStatuses) \
            AND updated_at < \(cutoffPlaceholder)\(waiting) ORDER BY updated_at LIMIT \(limitPlaceholder)
            """
        return statement
    }

    /// Deletes up to `limit` rows of a kind of some sends, in key order; returns a row for each.
    static func deleteRows(_ kind: RetentionKind, ofSends sends: [String], limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        let (_, table, key, owner) = perSend(kind)
        var statement = SQLStatement(dialect)
        let list = statement.bindList(sends)
        let limitPlaceholder = statement.bind(.integer(Int64(limit)))
        let owned = owner.column == "send_id" ? list : "SELECT \(owner.sendColumn) FROM sends WHERE id IN (\(list))"
        // By key, through the table's primary key: a range of it per send.
        statement.sql = """
            DELETE FROM \(table) WHERE (\(key)) IN (SELECT \(key) FROM \(table) WHERE \(owner.column) IN (\(owned)) \
            ORDER BY \(key) LIMIT \(limitPlaceholder)) RETURNING \(owner.column)
            """
        return statement
    }

    /// Marks those of some sends that have no rows of a kind left.
    static func markSends(_ sends: [String], without kind: RetentionKind, at now: Int64, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        let (mark, table, _, owner) = perSend(kind)
        var statement = SQLStatement(dialect)
        let nowPlaceholder = statement.bind(.integer(now))
        let list = statement.bindList(sends)
        statement.sql = """
            UPDATE sends SET \(mark) = \(nowPlaceholder) WHERE id IN (\(list)) \
            AND NOT EXISTS (SELECT 1 FROM \(table) r WHERE r.\(owner.column) = sends.\(owner.sendColumn)) RETURNING id
            """
        return statement
    }

    /// Deletes up to `limit` sends that finished before a moment and whose outcomes and receipt events are deleted,
    /// oldest first (their shards and receipt counts go with them); returns their ids.
    static func deleteFinishedSends(before cutoff: Int64, limit: Int, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            DELETE FROM sends WHERE id IN (SELECT id FROM sends WHERE created_at < $1 AND updated_at < $1 \
            AND \(finishedStatuses) AND outcomes_deleted_at IS NOT NULL AND receipts_deleted_at IS NOT NULL \
            ORDER BY created_at, id LIMIT $2\(skipLocked(dialect))) RETURNING id
            """, [.integer(cutoff), .integer(Int64(limit))])
    }

    /// Deletes up to `limit` console sessions last used before a moment; returns their id hashes.
    static func deleteConsoleSessions(lastSeenBefore cutoff: Int64, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            DELETE FROM console_sessions WHERE id_hash IN (SELECT id_hash FROM console_sessions \
            WHERE last_seen_at < $1 ORDER BY last_seen_at LIMIT $2\(skipLocked(dialect))) RETURNING id_hash
            """, [.integer(cutoff), .integer(Int64(limit))])
    }

    /// Deletes up to `limit` one-time sign-in links that expired before a moment; returns their hashes.
    static func deleteSignInLinks(expiredBefore cutoff: Int64, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        // A link is made per start of a server without an admin key: few rows, no index needed.
        SQLStatement(
            dialect,
            """
            DELETE FROM console_sign_in_links WHERE token_hash IN (SELECT token_hash FROM console_sign_in_links \
            WHERE expires_at < $1 LIMIT $2\(skipLocked(dialect))) RETURNING token_hash
            """, [.integer(cutoff), .integer(Int64(limit))])
    }

    /// Deletes up to `limit` tokens invalidated before a moment, oldest first, skipping (on PostgreSQL) those a
    /// registration holds; returns them.
    static func deleteInvalidatedTokens(before cutoff: Int64, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            DELETE FROM devices WHERE token IN (SELECT token FROM devices WHERE invalidated_at IS NOT NULL \
            AND invalidated_at < $1 ORDER BY invalidated_at LIMIT $2\(skipLocked(dialect))) RETURNING token
            """, [.integer(cutoff), .integer(Int64(limit))])
    }

    /// The rows a token alone holds as a preference subject (`t:` subjects): its choices, and its own quiet hours.
    enum TokenPreferenceRows {
        case choices
        case quietHours

        /// The table, and the columns of its primary key.
        fileprivate var table: (name: String, key: String) {
            switch self {
            case .choices: ("preference_choices", "topic, subject, category")
            case .quietHours: ("preference_quiet_hours", "topic, subject")
            }
        }
    }

    /// Deletes up to `limit` rows held by a token alone (`t:` subjects) whose token is gone, or was invalidated before
    /// a moment; returns a row for each.
    static func deleteTokenPreferences(
        _ rows: TokenPreferenceRows, goneBefore cutoff: Int64, limit: Int, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        let (table, key) = rows.table
        // 't:' <= subject < 't;' is the range of token subjects in the primary key's order within a topic.
        return SQLStatement(
            dialect,
            """
            DELETE FROM \(table) WHERE (\(key)) IN (SELECT \(key) FROM \(table) p WHERE p.subject >= 't:' \
            AND p.subject < 't;' AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.token = substr(p.subject, 3) \
            AND (d.invalidated_at IS NULL OR d.invalidated_at >= $1)) LIMIT $2\(skipLocked(dialect))) RETURNING subject
            """, [.integer(cutoff), .integer(Int64(limit))])
    }

    // MARK: Periods of send records (PostgreSQL, SendRecordPeriods)

    /// The periods, as ``SendRecordPeriods/Period``'s fields in order.
    package static let sendRecordPeriods = SQLStatement(
        .postgres,
        "SELECT period, first_ref, end_ref, opened_at, closed_at, length FROM send_record_periods ORDER BY period")

    /// The first run since the migration: the open period begins now, those before it close now.
    package static func startSendRecordPeriods(open: Int64, length: Int64, at now: Int64) -> [SQLStatement] {
        [
            SQLStatement(
                .postgres,
                "UPDATE send_record_periods SET opened_at = $2, length = $3 WHERE period = $1 AND opened_at IS NULL",
                [.integer(open), .integer(now), .integer(length)]),
            SQLStatement(
                .postgres, "UPDATE send_record_periods SET closed_at = $2 WHERE period < $1 AND closed_at IS NULL",
                [.integer(open), .integer(now)]),
        ]
    }

    /// Closes a period and opens the next, with its partitions. The bounds are numbers Herald computed, written into
    /// the DDL (which takes no parameters).
    package static func rollSendRecordPeriod(closing: Int64, next: SendRecordPeriods.Period) -> [SQLStatement] {
        let (first, end) = (next.firstRef ?? 0, next.endRef)
        return [
            SQLStatement(
                .postgres,
                "CREATE TABLE \(next.outcomesTable) PARTITION OF send_outcomes FOR VALUES FROM (\(first)) TO (\(end))"),
            SQLStatement(
                .postgres,
                "CREATE TABLE \(next.acceptancesTable) PARTITION OF send_acceptances FOR VALUES FROM (\(first)) TO (\(end))"),
            SQLStatement(
                .postgres, "UPDATE send_record_periods SET closed_at = $2 WHERE period = $1",
                [.integer(closing), .integer(next.openedAt ?? 0)]),
            SQLStatement(
                .postgres,
                """
                INSERT INTO send_record_periods (period, first_ref, end_ref, opened_at, length) VALUES ($1, $2, $3, $4, $5)
                """,
                [
                    .integer(next.number), .integer(first), .integer(end), .integer(next.openedAt ?? 0),
                    .integerOrNull(next.length),
                ]),
        ]
    }

    /// Moves the next send ref to the open period's first, unless the sequence is there already (it only moves
    /// forward; the `nextval` of the check is a gap, as a rolled-back insert leaves).
    package static func advanceSendRefs(to first: Int64) -> SQLStatement {
        SQLStatement(
            .postgres,
            """
            SELECT setval(pg_get_serial_sequence('sends', 'ref'), $1 - 1) \
            WHERE nextval(pg_get_serial_sequence('sends', 'ref')) < $1
            """, [.integer(first)])
    }

    /// One row when a send of a period has not finished, or finished at or after the cutoff: the period stays.
    package static func sendHoldingPeriod(_ refs: Range<Int64>, cutoff: Int64) -> SQLStatement {
        SQLStatement(
            .postgres,
            """
            SELECT 1 FROM sends WHERE ref >= $1 AND ref < $2 AND (NOT (\(finishedStatuses)) OR updated_at >= $3) LIMIT 1
            """, [.integer(refs.lowerBound), .integer(refs.upperBound), .integer(cutoff)])
    }

    /// What a period's drop deletes, before it does: its outcomes, a row each, and the devices of its batches.
    package static func periodOutcomes(_ period: SendRecordPeriods.Period) -> SQLStatement {
        SQLStatement(
            .postgres,
            """
            SELECT CAST((SELECT count(*) FROM \(period.outcomesTable)) \
            + (SELECT coalesce(sum(count), 0) FROM \(period.acceptancesTable)) AS BIGINT)
            """)
    }

    /// Drops a period whose sends all finished before the cutoff, in one transaction: its sends are marked as having
    /// no outcomes left (retention of sends can then delete them), their delivery trace's attempts go, then its
    /// partitions and its row.
    package static func dropSendRecordPeriod(_ period: SendRecordPeriods.Period, at now: Int64) -> [SQLStatement] {
        let (first, end) = (period.refs.lowerBound, period.refs.upperBound)
        return [
            SQLStatement(
                .postgres,
                """
                UPDATE sends SET outcomes_deleted_at = $3 WHERE ref >= $1 AND ref < $2 AND outcomes_deleted_at IS NULL
                """, [.integer(first), .integer(end), .integer(now)]),
            SQLStatement(
                .postgres,
                "DELETE FROM delivery_attempts WHERE send_id IN (SELECT id FROM sends WHERE ref >= $1 AND ref < $2)",
                [.integer(first), .integer(end)]),
            SQLStatement(.postgres, "DROP TABLE \(period.outcomesTable), \(period.acceptancesTable)"),
            SQLStatement(
                .postgres, "DELETE FROM send_record_periods WHERE period = $1", [.integer(period.number)]),
        ]
    }

    /// PostgreSQL: takes the retention lock of a schema for the transaction, without waiting; one row, 1 when taken.
    /// The first key is the bytes of "hrlr"; the second the schema's `hashtext`, as for migrations.
    package static func tryRetentionLock(schema: String) -> SQLStatement {
        SQLStatement(
            .postgres, "SELECT CASE WHEN pg_try_advisory_xact_lock(1752329330, hashtext($1)) THEN 1 ELSE 0 END",
            [.text(schema)])
    }

    /// `FOR UPDATE SKIP LOCKED` on PostgreSQL: the rows another transaction holds are left for a later batch, so a
    /// batch never waits for a registration or a sign-in. SQLite has one writer: nothing to skip.
    private static func skipLocked(_ dialect: SQLStatement.Dialect) -> String {
        dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
    }
}
