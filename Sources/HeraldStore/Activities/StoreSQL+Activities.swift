package import Foundation

extension StoreSQL {
    /// The columns of `activities`, in the order ``StoredRow/activity()`` reads them.
    package static let activityColumns =
        "topic, id, activity_type, status, updates, created_at, updated_at, ended_at, start_checked_at, started, not_started"

    /// Inserts an activity unless the app has one with its id; returns it when inserted.
    package static func insertActivity(_ activity: NewActivity, at now: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO activities (topic, id, activity_type, status, updates, created_at, updated_at, start_send_id, \
            channel_id) VALUES ($1, $2, $3, 'active', 0, $4, $4, $5, $6) ON CONFLICT (topic, id) DO NOTHING \
            RETURNING \(activityColumns)
            """,
            [
                .text(activity.topic), .text(activity.id), .text(activity.activityType),
                .integer(StoreTime.microseconds(now)), .textOrNull(activity.startSendID?.description),
                .textOrNull(activity.channelID),
            ])
    }

    /// An activity.
    package static func selectActivity(topic: String, id: String, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT \(activityColumns) FROM activities WHERE topic = $1 AND id = $2", [.text(topic), .text(id)])
    }

    /// Counts an update of a running activity, or ends it; returns it when it was running.
    package static func recordActivityPush(
        topic: String, id: String, ending: Bool, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            ending
                ? """
                UPDATE activities SET status = 'ended', ended_at = $3, updated_at = $3 \
                WHERE topic = $1 AND id = $2 AND status = 'active' RETURNING \(activityColumns)
                """
                : """
                UPDATE activities SET updates = updates + 1, updated_at = $3 \
                WHERE topic = $1 AND id = $2 AND status = 'active' RETURNING \(activityColumns)
                """,
            [.text(topic), .text(id), .integer(StoreTime.microseconds(now))])
    }

    /// A page of an app's activities, newest first, with one row more than `limit` to tell whether another page
    /// follows. Reads through `activities_newest`, or `activities_by_status` with a status (migration 12); the
    /// row-value comparison lets both backends seek to the cursor instead of skipping the rows before it.
    package static func selectActivities(
        topic: String, active: Bool?, after cursor: ActivityCursor?, limit: Int, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var conditions = ["topic = $1"]
        var binds: [SQLStatement.Value] = [.text(topic)]
        if let active { conditions.append(active ? "status = 'active'" : "status = 'ended'") }
        if let cursor {
            binds += [.integer(cursor.createdAt), .text(cursor.id)]
            conditions.append("(created_at, id) < ($\(binds.count - 1), $\(binds.count))")
        }
        binds.append(.integer(Int64(limit + 1)))
        return SQLStatement(
            dialect,
            """
            SELECT \(activityColumns) FROM activities WHERE \(conditions.joined(separator: " AND ")) \
            ORDER BY created_at DESC, id DESC LIMIT $\(binds.count)
            """, binds)
    }
}

extension ActivityPage {
    /// The page from rows of ``StoreSQL/selectActivities(topic:active:after:limit:_:)`` (at most one more than the
    /// limit).
    package init(_ activities: [ActivityRecord], limit: Int) {
        let kept = Array(activities.prefix(limit))
        self.init(
            activities: kept,
            next: activities.count > limit
                ? kept.last.map { ActivityCursor(createdAt: StoreTime.microseconds($0.createdAt), id: $0.id) } : nil)
    }
}

extension StoredRow {
    /// An activity from the columns of ``StoreSQL/activityColumns``.
    package func activity() throws -> ActivityRecord {
        let status = try text(3)
        guard status == "active" || status == "ended" else {
            throw StoreError(.corruptRecord, "A stored activity has an unreadable status: repair or delete the row.")
        }
        return ActivityRecord(
            topic: try text(0), id: try text(1), activityType: try text(2), isActive: status == "active",
            updates: Int(try integer(4)), createdAt: StoreTime.date(try integer(5)),
            updatedAt: StoreTime.date(try integer(6)), endedAt: try optionalInteger(7).map(StoreTime.date),
            startCheck: try optionalInteger(8).map { checkedAt in
                ActivityStartCheck(
                    started: Int(try integer(9)), notStarted: Int(try integer(10)), checkedAt: StoreTime.date(checkedAt))
            })
    }
}
