import Foundation
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
