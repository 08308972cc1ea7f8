import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import PostgresNIO
import Testing

/// A PostgreSQL store's operations end when their caller is cancelled, wherever that happens: postgres-nio never
/// answers a statement cancelled while it runs, nor, at times, a lease cancelled while the pool opens its first
/// connection, and a test cancelled at its time limit used to wait on one of them forever (the whole test run with it).
@Suite("PostgreSQL store: cancellation", .timeLimit(.minutes(3)))
struct PostgresCancellationTests {
    @Test(
        "a caller cancelled at any moment of migrating, claiming, or holding two instance locks gets its answer, and the store stops",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func cancelledAnywhere() async throws {
        var random = TestSeed.generator(for: "PostgreSQL store: cancellation")
        for round in 0..<30 {
            let delay = Duration.milliseconds(Int.random(in: 0...300, using: &random))
            let fixture = try PostgresStoreTests.fixture()
            let work = Task {
                let clock = ManualWallClock()
                try await StoreConformance.withRunning(try fixture.open(clock)) { store in
                    let lease = clock.now().addingTimeInterval(3_600)
                    for worker in ["alpha/1/dead", "beta/2/live"] {
                        _ = try await store.createSend(NewSend(target: worker, summary: "s"))
                        _ = try await store.claimNextQueuedSend(worker: worker, leaseUntil: lease)
                    }
                    try await store.withInstanceLock("alpha") { alpha in
                        try await store.withInstanceLock("beta") { _ in
                            _ = try await store.requeueAbandonedSends(of: alpha, keeping: "alpha/4/live")
                            try await Task.sleep(for: .milliseconds(50))
                        }
                    }
                }
            }
            try await Task.sleep(for: delay)
            work.cancel()
            // Waits for the work or 90 s, whichever comes first, without waiting on a task that might never end. A
            // statement already running is let finish, and at the start of a full run it can wait behind every other
            // suite's migrations (45 s, 65 s on a loaded machine: see PostgresStoreTests): 30 s failed there twice.
            let finished = await PostgresTestWaits.outcome(of: work, within: .seconds(90)) != nil
            await fixture.cleanup()
            guard finished else {
                Issue.record("round \(round): cancelled after \(delay), the operations had not ended 90 s later")
                return
            }
        }
    }

    @Test(
        "a migration whose caller is cancelled while it runs stops after the statement under way and applies nothing",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func cancelledMigration() async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let configuration = try PostgresStore.Configuration(url: url)
        let holder = PostgresClient(configuration: configuration.client)
        try await withCleanup({ await fixture.cleanup() }) {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await holder.run() }
                let (released, release) = AsyncStream.makeStream(of: Void.self)
                let (held, holding) = AsyncStream.makeStream(of: Void.self)
                // Holds the schema's migration lock, so the store's migration waits on its first statement: it has
                // its connection, and only the check between statements can stop it.
                group.addTask {
                    try await holder.withTransaction(logger: Logger(label: "test")) { connection in
                        _ = try await connection.query(
                            "SELECT pg_advisory_xact_lock(\(Self.migrationLock), hashtext(\(schema)))", logger: connection.logger)
                        holding.yield()
                        for await _ in released { break }
                    }
                }
                for await _ in held { break }
                let store = try fixture.open(ManualWallClock())
                try await StoreConformance.withRunning(store, migrate: false) { store in
                    let migration = Task { try await store.migrate() }
                    // The store's migration waits for the lock once PostgreSQL shows it waiting.
                    try await PostgresTestWaits.until(
                        holder,
                        counts: """
                            SELECT count(*)::int8 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                            AND classid::int8 = \(Int64(Self.migrationLock)) \
                            AND objid::int8 = (hashtext(\(schema))::int8 & 4294967295)
                            """)
                    migration.cancel()
                    release.finish()
                    await #expect(throws: CancellationError.self) { try await migration.value }
                    let health = try await store.health()
                    #expect(health.schemaVersion == 0, "nothing applied: \(health)")
                }
                group.cancelAll()
            }
        }
    }

    /// The first key of the store's migration lock (`PostgresStore.migrationLock`, "hrld"); the second is the schema's
    /// `hashtext`.
    static let migrationLock: Int32 = 0x68_72_6c_64
}
