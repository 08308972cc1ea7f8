public import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func recordChannel(_ channel: NewChannel) async throws -> Bool {
        let now = clock.now()
        return try await write("record a channel") { db in
            try !db.rows(StoreSQL.insertChannel(channel, at: now, .sqlite)).isEmpty
        }
    }

    public func channel(id: String) async throws -> ChannelRecord? {
        try await read("read a channel") { db in
            try db.rows(StoreSQL.selectChannel(id: id, .sqlite)).first?.channel()
        }
    }

    public func liveChannels(topic: String, environment: APNSEnvironment?, after: String?, limit: Int) async throws
        -> [ChannelRecord]
    {
        try await read("list channels") { db in
            try db.rows(StoreSQL.selectLiveChannels(topic: topic, environment: environment, after: after, limit: limit, .sqlite))
                .map { try $0.channel() }
        }
    }

    public func markChannelDeleted(id: String) async throws -> ChannelRecord? {
        let now = clock.now()
        return try await write("mark a channel deleted") { db in
            if let row = try db.rows(StoreSQL.markChannelDeleted(id: id, at: now, .sqlite)).first { return try row.channel() }
            return try db.rows(StoreSQL.selectChannel(id: id, .sqlite)).first?.channel()
        }
    }
}
