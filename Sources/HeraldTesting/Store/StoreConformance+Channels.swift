import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var channelCases: [Case] {
        [
            Case(
                "a channel is recorded once, listed while live per app and environment in id order by page, and stays recorded once deleted",
                channelLife)
        ]
    }

    static func channelLife(_ context: Context) async throws {
        let store = context.store
        // Base64 ids as APNs gives them, with `+` and `/`; their first letters differ so that PostgreSQL's collation
        // and SQLite's byte order agree on their order.
        let ids = ["dHdv+Q==", "b25l/w==", "eHJlZQ==", "f291cg=="]
        for (index, id) in ids.enumerated() {
            let environment: APNSEnvironment = index == 3 ? .development : .production
            #expect(try await store.recordChannel(NewChannel(id: id, topic: topic, environment: environment, storagePolicy: index % 2)))
        }
        #expect(try await store.recordChannel(NewChannel(id: "b3RoZXI=", topic: "com.example.other", environment: .production, storagePolicy: 0)))
        #expect(
            try await store.recordChannel(NewChannel(id: ids[0], topic: topic, environment: .production, storagePolicy: 1)) == false,
            "an id is recorded once")

        let first = try #require(try await store.channel(id: ids[0]))
        #expect(first.topic == topic && first.environment == .production && first.storagePolicy == 0)
        #expect(first.createdAt == context.clock.now() && first.isLive)
        #expect(try await store.channel(id: "bm9uZQ==") == nil)

        let production = try await store.liveChannels(topic: topic, environment: .production, after: nil, limit: 10)
        #expect(production.map(\.id) == ["b25l/w==", "dHdv+Q==", "eHJlZQ=="], "live, this app and environment, by id")
        let both = try await store.liveChannels(topic: topic, environment: nil, after: nil, limit: 10)
        #expect(both.map(\.id) == ["b25l/w==", "dHdv+Q==", "eHJlZQ==", "f291cg=="])
        let page = try await store.liveChannels(topic: topic, environment: .production, after: "b25l/w==", limit: 1)
        #expect(page.map(\.id) == ["dHdv+Q=="], "a page starts after the cursor")

        context.clock.advance(by: .seconds(30))
        let deleted = try #require(try await store.markChannelDeleted(id: "eHJlZQ=="))
        #expect(deleted.deletedAt == context.clock.now() && !deleted.isLive && deleted.storagePolicy == 0)
        context.clock.advance(by: .seconds(30))
        #expect(try await store.markChannelDeleted(id: "eHJlZQ==") == deleted, "a second deletion changes nothing")
        #expect(try await store.markChannelDeleted(id: "bm9uZQ==") == nil)
        #expect(try await store.channel(id: "eHJlZQ==") == deleted, "a deleted channel stays recorded")
        let live = try await store.liveChannels(topic: topic, environment: .production, after: nil, limit: 10)
        #expect(live.map(\.id) == ["b25l/w==", "dHdv+Q=="])
    }
}
