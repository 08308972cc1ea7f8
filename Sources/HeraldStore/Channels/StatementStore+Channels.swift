package import Foundation
package import HeraldCore

extension StatementStore {
    public func recordChannel(_ channel: NewChannel) async throws -> Bool {
        try await !writeRows("record a channel", StoreSQL.insertChannel(channel, at: clock.now(), dialect)).isEmpty
    }

    public func channel(id: String) async throws -> ChannelRecord? {
        try await readRows("read a channel", StoreSQL.selectChannel(id: id, dialect)).first?.channel()
    }

    public func liveChannels(topic: String, environment: APNSEnvironment?, after: String?, limit: Int) async throws
        -> [ChannelRecord]
    {
        let page = StoreSQL.selectLiveChannels(topic: topic, environment: environment, after: after, limit: limit, dialect)
        return try await readRows("list channels", page).map { try $0.channel() }
    }

    /// The channel as marked, or as it was when it had been marked before.
    public func markChannelDeleted(id: String) async throws -> ChannelRecord? {
        let (marked, found) = try await writeRows(
            "mark a channel deleted",
            [StoreSQL.markChannelDeleted(id: id, at: clock.now(), dialect), StoreSQL.selectChannel(id: id, dialect)]
        ).pair
        return try (marked.first ?? found.first)?.channel()
    }
}

extension StatementStore {
    public func markChannelUsed(id: String) async throws {
        _ = try await writeRows("record a channel's use", StoreSQL.markChannelUsed(id: id, at: clock.now(), dialect))
    }

    public func liveChannelCounts() async throws -> [LiveChannelCount] {
        try await readRows("count live channels", StoreSQL.liveChannelCounts(dialect)).map { row in
            guard let environment = APNSEnvironment(name: try row.text(1)) else {
                throw StoreError(
                    .corruptRecord, "A stored channel has an unreadable environment: repair or delete the row.")
            }
            return LiveChannelCount(topic: try row.text(0), environment: environment, count: Int(try row.integer(2)))
        }
    }

    public func idleChannels(unusedBefore: Date, limit: Int) async throws -> [ChannelRecord] {
        try await readRows(
            "find idle channels", StoreSQL.idleChannels(unusedBefore: unusedBefore, limit: limit, dialect)
        ).map { try $0.channel() }
    }
}
