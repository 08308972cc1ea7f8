package import Foundation
package import HeraldCore

extension StoreSQL {
    /// The columns of `channels`, in the order ``StoredRow/channel()`` reads them.
    package static let channelColumns = "id, topic, environment, storage_policy, created_at, deleted_at"

    /// Inserts a channel unless its id is recorded; returns its id when inserted.
    package static func insertChannel(_ channel: NewChannel, at now: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO channels (id, topic, environment, storage_policy, created_at) \
            VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING RETURNING id
            """,
            [
                .text(channel.id), .text(channel.topic), .text(channel.environment.name),
                .integer(Int64(channel.storagePolicy)), .integer(StoreTime.microseconds(now)),
            ])
    }

    /// A channel, live or deleted.
    package static func selectChannel(id: String, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "SELECT \(channelColumns) FROM channels WHERE id = $1", [.text(id)])
    }

    /// A page of an app's live channels, by id.
    package static func selectLiveChannels(
        topic: String, environment: APNSEnvironment?, after: String?, limit: Int, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var conditions = ["topic = $1", "deleted_at IS NULL"]
        var binds: [SQLStatement.Value] = [.text(topic)]
        if let environment {
            binds.append(.text(environment.name))
            conditions.append("environment = $\(binds.count)")
        }
        if let after {
            binds.append(.text(after))
            conditions.append("id > $\(binds.count)")
        }
        binds.append(.integer(Int64(limit)))
        return SQLStatement(
            dialect,
            "SELECT \(channelColumns) FROM channels WHERE \(conditions.joined(separator: " AND ")) ORDER BY id LIMIT $\(binds.count)",
            binds)
    }

    /// Marks a live channel deleted; returns it when it was live.
    package static func markChannelDeleted(id: String, at now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            "UPDATE channels SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING \(channelColumns)",
            [.text(id), .integer(StoreTime.microseconds(now))])
    }
}

extension StoredRow {
    /// A channel from the columns of ``StoreSQL/channelColumns``.
    package func channel() throws -> ChannelRecord {
        guard let environment = APNSEnvironment(name: try text(2)), let policy = Int(exactly: try integer(3)),
            policy == 0 || policy == 1
        else {
            throw StoreError(
                .corruptRecord, "A stored channel has an unreadable environment or storage policy: repair or delete the row.")
        }
        return ChannelRecord(
            id: try text(0), topic: try text(1), environment: environment, storagePolicy: policy,
            createdAt: StoreTime.date(try integer(4)), deletedAt: try optionalInteger(5).map(StoreTime.date))
    }
}

extension StoreSQL {
    package static func markChannelUsed(id: String, at now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "UPDATE channels SET last_used_at = $2 WHERE id = $1",
            [.text(id), .integer(StoreTime.microseconds(now))])
    }

    package static func liveChannelCounts(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT topic, environment, count(*) FROM channels WHERE deleted_at IS NULL \
            GROUP BY topic, environment ORDER BY topic, environment
            """)
    }

    /// Live channels that no running activity follows and that either had activities or were last used before a time
    /// (`activities_channel` finds a channel's activities).
    package static func idleChannels(unusedBefore: Date, limit: Int, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT \(channelColumns) FROM channels c WHERE c.deleted_at IS NULL \
            AND NOT EXISTS (SELECT 1 FROM activities a WHERE a.channel_id = c.id AND a.status = 'active') \
            AND (coalesce(c.last_used_at, c.created_at) < $1 \
            OR EXISTS (SELECT 1 FROM activities a WHERE a.channel_id = c.id)) \
            ORDER BY c.id LIMIT $2
            """, [.integer(StoreTime.microseconds(unusedBefore)), .integer(Int64(limit))])
    }
}
