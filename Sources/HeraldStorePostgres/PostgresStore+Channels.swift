public import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func recordChannel(_ channel: NewChannel) async throws -> Bool {
        let now = clock.now()
        return try await transaction("record a channel") { session in
            try await !session.rows(StoreSQL.insertChannel(channel, at: now, .postgres)).isEmpty
        }
    }

    public func channel(id: String) async throws -> ChannelRecord? {
        try await session("read a channel") { session in
            try await session.rows(StoreSQL.selectChannel(id: id, .postgres)).first?.channel()
        }
    }

    public func liveChannels(topic: String, environment: APNSEnvironment?, after: String?, limit: Int) async throws
        -> [ChannelRecord]
    {
        try await session("list channels") { session in
            let page = StoreSQL.selectLiveChannels(topic: topic, environment: environment, after: after, limit: limit, .postgres)
            return try await session.rows(page).map { try $0.channel() }
        }
    }

    public func markChannelDeleted(id: String) async throws -> ChannelRecord? {
        let now = clock.now()
        return try await transaction("mark a channel deleted") { session in
            if let row = try await session.rows(StoreSQL.markChannelDeleted(id: id, at: now, .postgres)).first {
                return try row.channel()
            }
            return try await session.rows(StoreSQL.selectChannel(id: id, .postgres)).first?.channel()
        }
    }
}
