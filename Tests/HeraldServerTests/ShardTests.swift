import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Synchronization
import Testing

@testable import HeraldServer

/// Large sends cut into shards: any worker of any instance runs them, and the send completes once, with exact counts.
@Suite("Server: sharded sends", .timeLimit(.minutes(3)))
struct ShardTests {
    static func register(_ store: any Store, _ count: Int) async throws -> [DeviceToken] {
        var tokens: [DeviceToken] = []
        for n in 1...count {
            let token = StoreConformance.token(n)
            _ = try await store.upsert(
                TokenRegistration(
                    token: token, topic: ServerHarness.topic, environment: n % 3 == 0 ? .production : .development))
            tokens.append(token)
        }
        return tokens
    }

    @Test(
        "a send above the shard size runs as shards and completes once: every device once, exact counts, shards listed",
        arguments: Backend.available)
    func shardedSend(backend: Backend) async throws {
        try await ServerHarness.withServer(
            backend,
            configure: {
                $0.limits.inlineSendLimit = 3
                $0.sending.shardSize = 10
                // Pages smaller than shards and not a divisor of them: a shard's end falls inside a page.
                $0.sending.pageSize = 4
            }
        ) { client, app in
            let key = try await SendTests.key(app)
            let tokens = try await Self.register(app.store, 45)
            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"topic": "com.example.app"}, "alert": "sharded"}"#, bearer: key)
            #expect(answer.status == .accepted, "\(answer)")
            let id = try #require(SendID(answer.json["id"]?.stringValue ?? ""))
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.status == .completed && finished.counts.accepted == 45 && finished.shardCount == 5)
            for token in tokens { #expect(try app.emulator!.inbox(for: token).count == 1) }
            let shown = try await client.call(.get, "/api/sends/\(id)?limit=1", bearer: key)
            let shards = try #require(shown.json["shards"]?.arrayValue)
            #expect(shards.compactMap { $0["size"]?.intValue } == [10, 10, 10, 10, 5], "\(shown)")
            #expect(shards.allSatisfy { $0["status"]?.stringValue == "done" && $0["worker"] == nil })
            #expect(shards.compactMap { $0["recorded"]?.intValue }.reduce(0, +) == 45)
            let polled = try await client.call(.get, "/api/sends/\(id)?limit=1&shards=none", bearer: key)
            #expect(polled.status == .ok && polled.json["shards"] == nil, "\(polled)")
            let wrong = try await client.call(.get, "/api/sends/\(id)?shards=some", bearer: key)
            #expect(wrong.status == .badRequest && wrong.body.contains("shards"), "\(wrong)")

            var browser = ConsoleClient(client)
            try await browser.signIn(key)
            let page = try await browser.call(.get, "/console/sends/\(id)").body
            #expect(page.contains("Lane: <strong>campaign</strong>") && page.contains("cut into 5 shards"), "\(page)")
            #expect(page.components(separatedBy: #"<span class="status-done">done</span>"#).count == 6)
        }
    }

    @Test("a send's console page lists at most 20 shards: beyond, those not done, and counts them all by status")
    func manyShardsCounted() async throws {
        try await ServerHarness.withServer(
            .sqlite,
            configure: {
                $0.limits.inlineSendLimit = 3
                $0.sending.shardSize = 2
            }
        ) { client, app in
            let key = try await SendTests.key(app)
            _ = try await Self.register(app.store, 45)
            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"topic": "com.example.app"}, "alert": "sharded"}"#, bearer: key)
            let id = try #require(SendID(answer.json["id"]?.stringValue ?? ""))
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.status == .completed && finished.shardCount == 23)

            var browser = ConsoleClient(client)
            try await browser.signIn(key)
            let page = try await browser.call(.get, "/console/sends/\(id)").body
            #expect(page.contains("23 shards: 23 done. Every one is done."), "\(page)")
            #expect(!page.contains(#"id="send-shards""#), "no table of shards all done")
        }
    }

    @Test(
        "a shard a dead worker held resumes after its checkpoint when its lease runs out; the others run as they are",
        arguments: Backend.available)
    func takeOver(backend: Backend) async throws {
        let clock = ManualWallClock()
        let sendID = SendID()
        let recordedBeforeTheCrash = Mutex<[DeviceToken]>([])
        try await ServerHarness.withServer(
            backend, clock: clock,
            configure: {
                $0.limits.inlineSendLimit = 3
                $0.sending.shardSize = 10
            },
            prepare: { store in
                _ = try await Self.register(store, 25)
                let job = #"{"target": {"topic": "com.example.app"}, "topic": "com.example.app", "alert": "resumed"}"#
                _ = try await store.createSend(
                    NewSend(
                        id: sendID, target: "every device", summary: "alert push", job: job, targetCount: 25,
                        lane: .campaign))
                let query = DeviceQuery.topic(ServerHarness.topic)
                _ = try await store.claimNextQueuedSend(worker: "dead/1/x", leaseUntil: clock.now().addingTimeInterval(60))
                let boundaries = try await store.shardBoundaries(matching: query, size: 10, limit: 10)
                #expect(
                    try await store.shardSend(
                        sendID, worker: "dead/1/x", boundaries: boundaries, size: 10, targetCount: 25))
                // The dead worker ran shard 1, recorded its first three devices, and died: its lease ran out.
                let shard = try #require(
                    try await store.claimShard(
                        worker: "dead/1/x", leaseUntil: clock.now().addingTimeInterval(-1), lanes: [.campaign],
                        excluding: []))
                let first = try await store.devices(
                    matching: query.through(shard.shard.through), after: shard.shard.after, limit: 3)
                _ = try await store.recordOutcomes(
                    first.devices.map {
                        DeliveryOutcome(
                            token: $0.token, environment: $0.environment, result: .accepted(apnsID: APNSID()),
                            at: clock.now())
                    }, for: sendID, shard: shard.shard.index, checkpoint: first.next)
                recordedBeforeTheCrash.withLock { $0 = first.devices.map(\.token) }
            }
        ) { client, app in
            app.worker.wake()
            let finished = try await app.worker.waitUntilFinished(sendID)
            #expect(finished.status == .completed && finished.counts.accepted == 25)
            let before = Set(recordedBeforeTheCrash.withLock { $0 })
            #expect(before.count == 3)
            for n in 1...25 {
                let token = StoreConformance.token(n)
                let received = app.emulator!.device(token) == nil ? 0 : try app.emulator!.inbox(for: token).count
                #expect(received == (before.contains(token) ? 0 : 1), "\(token.redacted)")
            }
        }
    }

    @Test(
        "two servers on one PostgreSQL database run the shards of one send together; it completes once, each device once",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func twoInstances() async throws {
        try await TestDatabase.with(.postgres) { databaseURL in
            // Each answer takes 20 ms and each server has two notifications in flight: a shard of 10 takes about
            // 100 ms, so one server cannot run every shard before the other looks.
            try await TrustingEmulator.with(faults: FaultConfiguration(latency: .fixed(milliseconds: 20))) {
                key, emulator, host in
                var servers: [HeraldApplication] = []
                for index in 0..<2 {
                    servers.append(
                        try await ServerHarness.build(databaseURL: databaseURL, logger: nil) { configuration in
                            configuration.apns = .custom(host)
                            configuration.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                            configuration.instanceID = "api-\(index)"
                            configuration.limits.inlineSendLimit = 3
                            configuration.sending.shardSize = 10
                            configuration.sending.maximumInFlight = 2
                            configuration.sending.runningSendsPerLane = 1
                            // No poll within the test: the second server learns of the shards from PostgreSQL's
                            // NOTIFY alone.
                            configuration.sending.pollInterval = .seconds(3600)
                        })
                }
                let built = servers
                try await built[0].test(.router) { first in
                    try await built[1].test(.router) { second in
                        let clients = [ServerClient(client: first), ServerClient(client: second)]
                        let token = try await SendTests.key(built[0])
                        let tokens = try await Self.register(built[0].store, 80)
                        let answer = try await clients[0].call(
                            .post, "/api/send", body: #"{"target": {"topic": "com.example.app"}, "alert": "together"}"#,
                            bearer: token)
                        let id = try #require(SendID(answer.json["id"]?.stringValue ?? ""), "\(answer)")
                        // The first server cuts the send when it claims it; the second hears of its shards at once.
                        let finished = try await withThrowingTaskGroup(of: SendRecord.self) { group in
                            for server in built { group.addTask { try await server.worker.waitUntilFinished(id) } }
                            let finished = try await group.next()!
                            group.cancelAll()
                            return finished
                        }
                        #expect(finished.status == .completed && finished.counts.accepted == 80 && finished.shardCount == 8)
                        for token in tokens { #expect(try emulator.inbox(for: token).count == 1) }
                        for client in clients {
                            let metrics = try await client.call(.get, "/metrics").body
                            let claims = metrics.split(separator: "\n").first {
                                $0.hasPrefix(#"herald_send_claims_total{lane="campaign",kind="shard",resumed="false"}"#)
                            }
                            #expect(claims != nil, "each server ran shards: \(metrics)")
                        }
                    }
                }
            }
        }
    }
}
