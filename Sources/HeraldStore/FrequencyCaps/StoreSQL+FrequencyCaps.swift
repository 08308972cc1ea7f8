package import Foundation

/// One claim of ``FrequencyCapStore/claimFrequencyCaps(_:topic:subjects:send:recordOnSend:at:)`` as statements both
/// backends run in one transaction: ``prepare`` makes sure each subject has a counter per cap, ``lock`` reads them
/// (locked on PostgreSQL, in key order so that two claims never wait on each other in a circle; SQLite has one
/// writer), and ``decide(_:)`` takes the subjects with room in every cap and gives the statements that spend it.
package struct FrequencyCapClaimPlan: Sendable {
    let caps: [FrequencyCap]
    let topic: String
    let subjects: [String]
    let uniqueSubjects: [String]
    let send: SendID
    let recordOnSend: Bool
    let windows: [(start: Int64, end: Int64)]
    let dialect: SQLStatement.Dialect

    package init(
        _ caps: [FrequencyCap], topic: String, subjects: [String], send: SendID, recordOnSend: Bool, at date: Date,
        _ dialect: SQLStatement.Dialect
    ) {
        self.caps = caps
        self.topic = topic
        self.subjects = subjects
        uniqueSubjects = Set(subjects).sorted()
        self.send = send
        self.recordOnSend = recordOnSend
        windows = caps.map { $0.window(at: date) }
        self.dialect = dialect
    }

    /// Whether there is nothing to claim: no cap, or no subject.
    package var isEmpty: Bool { caps.isEmpty || uniqueSubjects.isEmpty }

    /// The claim of a send with one cap (the common case) as one upsert, whose rows are the subjects allowed; `nil`
    /// for several caps, whose room must be known in every one of them before any is spent (``prepare``, ``lock``).
    ///
    /// Each counter is written once: a person without one gets it at 1, one with room gets one more, the send's own
    /// earlier claim is kept as it is, and a full one is left alone (locked, not written, not returned). Rows are
    /// taken in the order of the values, the same for every claim, so two never wait on each other in a circle.
    package var upsert: SQLStatement? {
        guard caps.count == 1 else { return nil }
        var statement = SQLStatement(dialect)
        let key = bindKey(0, into: &statement)
        let sendPlaceholder = statement.bind(send.description)
        let end = statement.bind(.integer(windows[0].end))
        let limit = statement.bind(.integer(Int64(caps[0].limit)))
        let values = uniqueSubjects.map { "(\(statement.bind($0)))" }.joined(separator: ", ")
        // `WHERE 1 = 1` keeps SQLite from reading ON CONFLICT as a join's constraint.
        statement.sql = """
            INSERT INTO frequency_counts AS c (topic, scope, period_seconds, window_start, subject, count, last_send, \
            expires_at) SELECT \(key.topic), \(key.scope), \(key.period), \(key.window), s.column1, 1, \(sendPlaceholder), \(end) \
            FROM (VALUES \(values)) AS s WHERE 1 = 1 ON CONFLICT (topic, scope, period_seconds, window_start, subject) \
            DO UPDATE SET count = c.count + CASE WHEN c.last_send = excluded.last_send THEN 0 ELSE 1 END, \
            last_send = excluded.last_send WHERE c.last_send = excluded.last_send OR c.count < \(limit) RETURNING subject
            """
        return statement
    }

    /// What the claim of ``upsert`` decided from its rows (the subjects allowed), and the statement that counts the
    /// devices left out on the send's row, when it records them.
    package func decide(upserted rows: [some StoredRow]) throws -> (claim: FrequencyCapClaim, spend: [SQLStatement]) {
        let allowed = Set(try rows.map { try $0.text(0) })
        let suppressed = subjects.count { !allowed.contains($0) }
        return (FrequencyCapClaim(allowed: allowed, suppressed: suppressed), recording(suppressed))
    }

    /// A counter at zero for each subject and cap that has none in the current window.
    package var prepare: [SQLStatement] {
        caps.indices.map { index in
            var statement = SQLStatement(dialect)
            let key = bindKey(index, into: &statement)
            let end = statement.bind(.integer(windows[index].end))
            let values = uniqueSubjects.map { "(\(statement.bind($0)))" }.joined(separator: ", ")
            // `WHERE 1 = 1` keeps SQLite from reading ON CONFLICT as a join's constraint.
            statement.sql = """
                INSERT INTO frequency_counts (topic, scope, period_seconds, window_start, subject, count, last_send, \
                expires_at) SELECT \(key.topic), \(key.scope), \(key.period), \(key.window), s.column1, 0, '', \(end) \
                FROM (VALUES \(values)) AS s WHERE 1 = 1 ON CONFLICT DO NOTHING
                """
            return statement
        }
    }

    /// The counters of the subjects, one statement per cap: `subject, count, last_send`.
    package var lock: [SQLStatement] {
        caps.indices.map { index in
            var statement = SQLStatement(dialect)
            let key = bindKey(index, into: &statement)
            // In key order: every claim locks the same rows in the same order, so two never wait on each other.
            statement.sql = """
                SELECT subject, count, last_send FROM frequency_counts WHERE topic = \(key.topic) \
                AND scope = \(key.scope) AND period_seconds = \(key.period) AND window_start = \(key.window) \
                AND subject IN (\(statement.bindList(uniqueSubjects))) ORDER BY subject\(dialect == .postgres ? " FOR UPDATE" : "")
                """
            return statement
        }
    }

    /// What the claim decides from the rows of each statement of ``lock``, and the statements that spend it and
    /// count the devices left out.
    package func decide(_ rowsByCap: [[some StoredRow]]) throws -> (claim: FrequencyCapClaim, spend: [SQLStatement]) {
        var denied = Set<String>()
        var unspent = Array(repeating: [String](), count: caps.count)
        let sendID = send.description
        for (index, rows) in zip(caps.indices, rowsByCap) {
            for row in rows {
                let subject = try row.text(0)
                // The send's own claim (another device of the person, a resumed run) spends nothing more.
                if try row.text(2) == sendID { continue }
                if try row.integer(1) >= Int64(caps[index].limit) {
                    denied.insert(subject)
                } else {
                    unspent[index].append(subject)
                }
            }
        }
        let allowed = Set(uniqueSubjects).subtracting(denied)
        var spend: [SQLStatement] = []
        for index in caps.indices {
            let spending = unspent[index].filter { !denied.contains($0) }
            guard !spending.isEmpty else { continue }
            var statement = SQLStatement(dialect)
            let sendPlaceholder = statement.bind(sendID)
            let key = bindKey(index, into: &statement)
            statement.sql = """
                UPDATE frequency_counts SET count = count + 1, last_send = \(sendPlaceholder) WHERE topic = \(key.topic) \
                AND scope = \(key.scope) AND period_seconds = \(key.period) AND window_start = \(key.window) \
                AND subject IN (\(statement.bindList(spending.sorted())))
                """
            spend.append(statement)
        }
        let suppressed = subjects.count { !allowed.contains($0) }
        return (FrequencyCapClaim(allowed: allowed, suppressed: suppressed), spend + recording(suppressed))
    }

    /// The statement that adds the devices left out to the send's row, when the claim records them and left any out.
    private func recording(_ suppressed: Int) -> [SQLStatement] {
        guard recordOnSend, suppressed > 0 else { return [] }
        return [
            SQLStatement(
                dialect, "UPDATE sends SET suppressed_frequency_cap = suppressed_frequency_cap + $1 WHERE id = $2",
                [.integer(Int64(suppressed)), .text(send.description)])
        ]
    }

    private func bindKey(_ index: Int, into statement: inout SQLStatement)
        -> (topic: String, scope: String, period: String, window: String)
    {
        (
            statement.bind(topic), statement.bind(caps[index].scope),
            statement.bind(.integer(Int64(caps[index].periodSeconds))), statement.bind(.integer(windows[index].start))
        )
    }
}

extension StoreSQL {
    /// A subject's counter in the current window of a cap: `count, last_send`, or no row.
    package static func frequencyCapCounter(
        _ cap: FrequencyCap, topic: String, subject: String, at date: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT count, last_send FROM frequency_counts WHERE topic = $1 AND scope = $2 AND period_seconds = $3 \
            AND window_start = $4 AND subject = $5
            """,
            [
                .text(topic), .text(cap.scope), .integer(Int64(cap.periodSeconds)), .integer(cap.window(at: date).start),
                .text(subject),
            ])
    }

    /// Deletes up to `limit` counters whose window ended before a moment; returns a row for each.
    package static func purgeFrequencyWindows(endedBefore date: Date, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            DELETE FROM frequency_counts WHERE (topic, scope, period_seconds, window_start, subject) IN \
            (SELECT topic, scope, period_seconds, window_start, subject FROM frequency_counts WHERE expires_at <= $1 \
            ORDER BY expires_at LIMIT $2) RETURNING expires_at
            """, [.integer(StoreTime.microseconds(date)), .integer(Int64(limit))])
    }
}

extension StoredRow {
    /// A counter from `count, last_send`.
    package func frequencyCapCounter() throws -> FrequencyCapCounter {
        FrequencyCapCounter(count: Int(try integer(0)), lastSend: SendID(try text(1)))
    }
}
