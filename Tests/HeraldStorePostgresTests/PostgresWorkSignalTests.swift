import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import Logging
import PostgresNIO
import Testing

/// Instances on one database tell each other of work: `LISTEN`/`NOTIFY` wakes an idle worker when another instance
/// queues a send or cuts one into shards, instead of its next poll.
@Suite("PostgreSQL store: work signals between instances", .timeLimit(.minutes(2)))
struct PostgresWorkSignalTests {
    @Test(
        "a queued send and a send cut into shards notify the schema's channel; a store watching it is woken, and stops when cancelled; a pool under 4 connections does not listen",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func heardAcrossInstances() async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let channel = "herald_work_\(schema)"
        let probe = PostgresClient(configuration: try PostgresStore.Configuration(url: url).client)
        let logger = Logger(label: "test")
        try await withCleanup({ await fixture.cleanup() }) {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await probe.run() }
                try await StoreConformance.withRunning(try fixture.open(ManualWallClock())) { other in
                    // The probe's LISTEN is in place when `consume` runs: each notification after it arrives.
                    try await probe.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            var heard = notifications.makeAsyncIterator()
                            let send = try await other.createSend(
                                NewSend(target: "every device", summary: "s", job: "{}", targetCount: 25, lane: .campaign))
                            #expect(try await heard.next() != nil, "a queued send notifies")
                            for n in 1...25 { _ = try await other.upsert(StoreConformance.registration(n)) }
                            let lease = Date().addingTimeInterval(60)
                            #expect(try await other.claimNextQueuedSend(worker: "planner", leaseUntil: lease)?.id == send.id)
                            let boundaries = try await other.shardBoundaries(
                                matching: .topic("com.example.herald"), size: 10, limit: 100)
                            #expect(
                                try await other.shardSend(
                                    send.id, worker: "planner", boundaries: boundaries, size: 10, targetCount: 25))
                            #expect(try await heard.next() != nil, "shards notify")
                        }
                    }
                    // A pool of 3 keeps its connections for operations: nothing to watch, at once.
                    try await other.watchForWork { Issue.record("a store with a pool of 3 listened") }
                }

                let listening = try PostgresStore(url: url.replacingOccurrences(of: "pool=3", with: "pool=4"))
                try await StoreConformance.withRunning(listening) { listening in
                    let (wakes, wake) = AsyncStream.makeStream(of: Void.self)
                    let watching = Task { try await listening.watchForWork { wake.yield() } }
                    // Notifications sent until one wakes the store: those before its LISTEN are lost, not queued.
                    let notifying = Task {
                        while !Task.isCancelled {
                            _ = try await probe.query("SELECT pg_notify(\(channel), '')", logger: logger)
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                    for await _ in wakes { break }
                    notifying.cancel()
                    _ = try? await notifying.value
                    watching.cancel()
                    try await watching.value
                }
                group.cancelAll()
            }
        }
    }
}
