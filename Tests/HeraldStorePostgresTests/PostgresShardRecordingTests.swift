import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import PostgresNIO
import Testing

/// The shards of one send record side by side on PostgreSQL: a batch locks its shard's row, not the send's. When every
/// batch locked the send's row, a million-device fan-out ran at a sixth of the bare sender's speed, most of its
/// statements waiting for that lock (docs/benchmarks.md).
@Suite("PostgreSQL store: shards record side by side", .timeLimit(.minutes(3)))
struct PostgresShardRecordingTests {
    @Test(
        "a shard's batch waits for no other shard nor for the send's row, and a second batch of the same shard waits for the first",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func shardsRecordSideBySide() async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let holder = PostgresClient(configuration: try PostgresStore.Configuration(url: url).client)
        let clock = ManualWallClock()
        try await withCleanup({ await fixture.cleanup() }) {
            try await StoreConformance.withRunning(try fixture.open(clock)) { store in
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask { await holder.run() }
                    defer { group.cancelAll() }
                    let (send, shards) = try await Self.shardedSend(store, clock: clock)
                    let batches = try await shards.asyncMap { shard in
                        try await store.devices(
                            matching: Self.query.after(shard.after).through(shard.through), after: nil, limit: 2
                        ).devices.map {
                            DeliveryOutcome(
                                token: $0.token, environment: $0.environment, result: .accepted(apnsID: APNSID()),
                                at: clock.now())
                        }
                    }

                    // Another session holds the send's row as an update does, and shard 0's row, as a batch of shard
                    // 0 and the end of a shard's run would in their transactions.
                    let (released, release) = AsyncStream.makeStream(of: Void.self)
                    let (held, holding) = AsyncStream.makeStream(of: Void.self)
                    let holding0 = Task {
                        try await holder.withTransaction(logger: Logger(label: "test")) { connection in
                            let id = send.id.description
                            _ = try await connection.query(
                                "SELECT id FROM \(unescaped: schema).sends WHERE id = \(id) FOR NO KEY UPDATE",
                                logger: connection.logger)
                            _ = try await connection.query(
                                "SELECT shard FROM \(unescaped: schema).send_shards WHERE send_id = \(id) AND shard = 0 FOR UPDATE",
                                logger: connection.logger)
                            holding.yield()
                            for await _ in released { break }
                        }
                    }
                    for await _ in held { break }

                    let otherShard = Task {
                        try await store.recordOutcomes(batches[1], for: send.id, shard: 1, checkpoint: nil)
                    }
                    guard let counts = try await PostgresTestWaits.outcome(of: otherShard, within: .seconds(60))?.get() else {
                        Issue.record("shard 1's batch waited 60 s for a lock another shard's transaction held")
                        release.finish()
                        try await holding0.value
                        return
                    }
                    #expect(counts.accepted == 2)

                    let sameShard = Task {
                        try await store.recordOutcomes(batches[0], for: send.id, shard: 0, checkpoint: nil)
                    }
                    // Once PostgreSQL shows shard 0's batch waiting for the row lock the other session holds.
                    try await PostgresTestWaits.until(
                        holder,
                        counts: """
                            SELECT count(*)::int8 FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                            AND query LIKE 'SELECT shard, % FROM send_shards WHERE send_id = $1 AND shard = $2 FOR UPDATE%'
                            """)
                    release.finish()
                    try await holding0.value
                    #expect(try await sameShard.value.accepted == 4, "recorded once the other session let go")
                    #expect(try await store.send(send.id)?.counts.accepted == 4)
                    let outcomes = try await store.outcomes(of: send.id, after: nil, limit: 100).outcomes
                    #expect(outcomes.map(\.token) == (batches[0] + batches[1]).map(\.token), "by shard, as recorded")
                }
            }
        }
    }

    static let query = DeviceQuery.topic("com.example.herald")

    /// A running send of 25 devices cut into 3 shards, each claimed.
    static func shardedSend(_ store: any Store, clock: ManualWallClock) async throws -> (SendRecord, [SendShard]) {
        for n in 1...25 { _ = try await store.upsert(StoreConformance.registration(n)) }
        let send = try await store.createSend(
            NewSend(target: "every device", summary: "s", job: "{}", targetCount: 25, lane: .campaign))
        let lease = clock.now().addingTimeInterval(600)
        _ = try await store.claimNextQueuedSend(worker: "planner", leaseUntil: lease)
        let boundaries = try await store.shardBoundaries(matching: query, size: 10, limit: 100)
        #expect(try await store.shardSend(send.id, worker: "planner", boundaries: boundaries, size: 10, targetCount: 25))
        var shards: [SendShard] = []
        while let claimed = try await store.claimShard(
            worker: "w\(shards.count)", leaseUntil: lease, lanes: [.campaign], excluding: [])
        {
            shards.append(claimed.shard)
        }
        #expect(shards.count == 3)
        return (send, shards)
    }
}

extension Array where Element: Sendable {
    fileprivate func asyncMap<T: Sendable>(_ transform: (Element) async throws -> T) async throws -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
