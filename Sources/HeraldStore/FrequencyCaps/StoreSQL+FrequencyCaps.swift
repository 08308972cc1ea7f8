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
        if recordOnSend, suppressed > 0 {
            spend.append(
                SQLStatement(
                    dialect,
                    "UPDATE sends SET suppressed_frequency_cap = suppressed_frequency_cap + $1 WHERE id = $2",
                    [.integer(Int64(suppressed)), .text(sendID)]))
        }
        return (FrequencyCapClaim(allowed: allowed, suppressed: suppressed), spend)
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
