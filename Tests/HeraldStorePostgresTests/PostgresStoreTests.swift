import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import PostgresNIO
import Testing

/// The URL of a PostgreSQL database the tests may create schemas in; `.ci/run` always sets it.
let testDatabaseURL = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"]

@Suite("PostgreSQL store")
struct PostgresStoreTests {
    /// A fresh schema in the test database; dropped after the case.
    static func fixture() throws -> StoreFixture {
        try caseDatabase().fixture
    }

    /// A fresh schema in the test database, the URL of stores on it, and the fixture that drops it after the case.
    static func caseDatabase() throws -> (fixture: StoreFixture, url: String, schema: String) {
        let url = try #require(testDatabaseURL)
        let schema = "herald_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let caseURL = url + (url.contains("?") ? "&" : "?") + "schema=\(schema)&pool=3"
        let fixture = StoreFixture(
            open: { clock in try PostgresStore(url: caseURL, clock: clock) },
            cleanup: {
                guard let configuration = try? PostgresStore.Configuration(url: url) else { return }
                let client = PostgresClient(configuration: configuration.client)
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await client.run() }
                    _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"))
                    group.cancelAll()
                }
            })
        return (fixture, caseURL, String(schema))
    }

    @Test(
        "behaves as every store must", .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"),
        .timeLimit(.minutes(3)), arguments: StoreConformance.cases)
    func conformance(_ check: StoreConformance.Case) async throws {
        try await StoreConformance.run(check, on: Self.fixture())
    }

    @Test(
        "an instance lock puts back only its own instance's sends: another instance's live worker keeps them until its lease runs out",
        // Alone it takes a quarter of a second; in a full run it waits behind the other suites' migrations (about
        // 45 s, 65 s on a loaded machine), as the server suites on PostgreSQL do, which have 2 minutes too.
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(2)))
    func instanceLockLeavesOtherInstances() async throws {
        let clock = ManualWallClock()
        let fixture = try Self.fixture()
        let otherSchema = try Self.fixture()
        let cleanup = {
            await fixture.cleanup()
            await otherSchema.cleanup()
        }
        do {
            try await checkInstanceLocks(fixture: fixture, otherSchema: otherSchema, clock: clock)
        } catch {
            await cleanup()
            throw error
        }
        await cleanup()
    }

    private func checkInstanceLocks(fixture: StoreFixture, otherSchema: StoreFixture, clock: ManualWallClock)
        async throws
    {
        try await StoreConformance.withRunning(try fixture.open(clock)) { store in
            let lease = clock.now().addingTimeInterval(3_600)
            var sends: [String: SendID] = [:]
            for worker in ["alpha/1/dead", "beta/2/live", "alphabet/3/live", "alpha/4/live"] {
                sends[worker] = try await store.createSend(NewSend(target: worker, summary: "s")).id
                clock.advance(by: .seconds(1))
                #expect(try await store.claimNextQueuedSend(worker: worker, leaseUntil: lease)?.id == sends[worker])
            }
            let held = sends
            try await StoreConformance.withRunning(try otherSchema.open(clock)) { elsewhere in
                try await store.withInstanceLock("alpha") { alpha in
                    try await store.withInstanceLock("beta") { beta in
                        try await elsewhere.withInstanceLock("alpha") { otherDeployment in
                            #expect(
                                alpha.isHeld && beta.isHeld && otherDeployment.isHeld,
                                "instances hold their own locks, and a schema is a deployment of its own")
                        }
                        #expect(
                            try await store.requeueAbandonedSends(of: alpha, keeping: "alpha/4/live")
                                == [held["alpha/1/dead"]!],
                            "beta's and alphabet's workers may be alive")
                    }
                }
            }
            #expect(try await store.send(held["beta/2/live"]!)?.worker == "beta/2/live")
            #expect(try await store.send(held["alphabet/3/live"]!)?.worker == "alphabet/3/live")
        }
    }

    @Test(
        "a database of schema 6 keeps its sends, outcomes and devices through every later migration; its sends can be cancelled and its devices registered again",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(3)))
    func upgradeToReceipts() async throws {
        try await StoreConformance.checkUpgradeToReceipts(on: Self.fixture())
    }

    @Test(
        "a database of schema 26 keeps every outcome through the compact outcomes (27): tokens, apns-ids, order, trace, deliveries, receipts",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(3)))
    func upgradeToCompactOutcomes() async throws {
        try await StoreConformance.checkUpgradeToCompactOutcomes(on: Self.fixture())
    }

    @Test("a URL gives server, credentials, database, TLS mode, schema and pool size")
    func url() throws {
        let configuration = try PostgresStore.Configuration(
            url: "postgres://herald:s%40cret@127.0.0.1:5433/registry?sslmode=disable&schema=tenant_1&pool=7")
        #expect(configuration.client.host == "127.0.0.1" && configuration.client.port == 5433)
        #expect(configuration.client.username == "herald" && configuration.client.password == "s@cret")
        #expect(configuration.client.database == "registry" && configuration.schema == "tenant_1")
        #expect(configuration.client.options.maximumConnections == 7)
        let defaults = try PostgresStore.Configuration(url: "postgresql://herald@db.internal/herald")
        #expect(defaults.client.port == 5432 && defaults.client.password == nil && defaults.schema == nil)
        #expect(defaults.acquireTimeout == .seconds(10))
        let patient = try PostgresStore.Configuration(url: "postgresql://herald@db.internal/herald?connect_timeout=60")
        #expect(patient.acquireTimeout == .seconds(60))
        #expect(defaults.operationTimeout == .seconds(30) && defaults.awayTimeout == .seconds(1))
        let slow = try PostgresStore.Configuration(url: "postgresql://herald@db.internal/herald?query_timeout=600")
        #expect(slow.operationTimeout == .seconds(600))
    }

    @Test(
        "bad URLs are refused without showing the password",
        arguments: [
            "sqlite:///x.sqlite", "postgres://:hunter2@host/db", "postgres://u:hunter2@/db",
            "postgres://u:hunter2@h/db?sslmode=sometimes", "postgres://u:hunter2@h/db?schema=Drop;Table",
            "postgres://u:hunter2@h/db?pool=0", "postgres://u:hunter2@h/db?connect_timeout=0",
            "postgres://u:hunter2@h/db?connect_timeout=soon", "postgres://u:hunter2@h/db?query_timeout=0",
            "postgres://u:hunter2@h/db?query_timeout=forever",
        ])
    func badURL(url: String) {
        let error = #expect(throws: StoreError.self) { try PostgresStore.Configuration(url: url) }
        #expect(error?.code == .invalidURL)
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test("an unreachable server is reported as unavailable once the acquire timeout passes", .timeLimit(.minutes(1)))
    func unreachable() async throws {
        // Port 1 on loopback refuses connections at once.
        var configuration = try PostgresStore.Configuration(url: "postgres://herald@127.0.0.1:1/herald?sslmode=disable")
        configuration.acquireTimeout = .milliseconds(300)
        let store = PostgresStore(configuration: configuration)
        let error = await #expect(throws: StoreError.self) {
            try await StoreConformance.withRunning(store) { _ in }
        }
        #expect(error?.code == .unavailable)
    }
}
