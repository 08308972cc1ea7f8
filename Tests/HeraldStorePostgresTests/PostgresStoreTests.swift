import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import PostgresNIO
import Testing

/// The URL of a PostgreSQL database the tests may create schemas in; `.ci/run` always sets it.

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
            open: { clock in
                var configuration = try PostgresStore.Configuration(url: caseURL, clock: clock)
                // The cases run side by side, migrations and all, on two cores: a pulse unanswered for a second there
                // is the machine's load, not a database gone, and the operations of a store that took it for one must
                // still get their connection (in a full run one waited past the 1 s bound and failed its case). How
                // the store fails while the database is away: PostgresPulseTests and the server's fault tests.
                configuration.awayTimeout = .seconds(10)
                return PostgresStore(configuration: configuration)
            },
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

    @Test(
        "an instance lock lost with its connection (a restart, a failover) is taken again once the database answers",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(2)))
    func instanceLockTakenAgain() async throws {
        let (fixture, url, schema) = try Self.caseDatabase()
        let admin = PostgresClient(configuration: try PostgresStore.Configuration(url: url).client)
        let key = PostgresStore.instanceLockKey("alpha", schema: schema)
        let bits = UInt64(bitPattern: key)
        // pg_locks shows a bigint advisory key as its high and low 32 bits.
        let (high, low) = (Int64(bits >> 32), Int64(bits & 0xffff_ffff))
        try await withCleanup({ await fixture.cleanup() }) {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await admin.run() }
                defer { group.cancelAll() }
                try await StoreConformance.withRunning(try fixture.open(SystemWallClock())) { store in
                    try await StoreConformance.withRunning(try fixture.open(SystemWallClock())) { other in
                        try await store.withInstanceLock("alpha") { lock in
                            #expect(lock.isHeld)
                            let holders: PostgresQuery = """
                                SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 \
                                AND classid::bigint = \(high) AND objid::bigint = \(low) AND granted
                                """
                            let first = try await admin.query(holders).collect().map { try $0.decode(Int32.self) }
                            #expect(first.count == 1)
                            _ = try await admin.query("SELECT pg_terminate_backend(\(first[0]))").collect()
                            // The holder notices the closed connection, then takes the lock on another.
                            try await Self.until { !lock.isHeld }
                            try await Self.until { lock.isHeld }
                            let again = try await admin.query(holders).collect().map { try $0.decode(Int32.self) }
                            #expect(again.count == 1 && again != first, "held again, on another connection")
                            try await other.withInstanceLock("alpha") { second in
                                #expect(!second.isHeld, "a second process with the same id does not get it")
                            }
                        }
                        try await other.withInstanceLock("alpha") { second in
                            #expect(second.isHeld, "released when the first process is done with it")
                        }
                    }
                }
            }
        }
    }

    /// Waits until `condition` holds, looking every 20 ms: the suite's time limit bounds it.
    private static func until(_ condition: @escaping @Sendable () -> Bool) async throws {
        while !condition() { try await Task.sleep(for: .milliseconds(20)) }
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
        #expect(defaults.hosts == [.init("db.internal")] && defaults.targetSessionAttributes == .readWrite)
        #expect(defaults.watchesSilentConnections)
        #expect(try !PostgresStore.Configuration(url: "postgresql://h@db/x?silent_connection_watch=off").watchesSilentConnections)
    }

    @Test("a URL names a primary and its standbys as libpq takes them: in the authority, or host= and port= options")
    func severalHosts() throws {
        typealias Host = PostgresStore.Configuration.Host
        let listed = try PostgresStore.Configuration(
            url: "postgres://herald:s%40cret@db-a:5433,db-b,[::1]:5434/registry?sslmode=disable&schema=tenant_1")
        #expect(listed.hosts == [Host("db-a", port: 5433), Host("db-b"), Host("::1", port: 5434)])
        #expect(listed.client.host == "db-a" && listed.client.port == 5433 && listed.client.password == "s@cret")
        #expect(listed.client.database == "registry" && listed.schema == "tenant_1")
        #expect(listed.targetSessionAttributes == .readWrite)
        let options = try PostgresStore.Configuration(
            url: "postgresql://herald@/registry?host=db-a,db-b&port=6000,6001&target_session_attrs=any")
        #expect(options.hosts == [Host("db-a", port: 6000), Host("db-b", port: 6001)])
        #expect(options.targetSessionAttributes == .any && options.client.host == "db-a")
        let onePort = try PostgresStore.Configuration(url: "postgresql://herald@/registry?host=db-a,db-b&port=6000")
        #expect(onePort.hosts == [Host("db-a", port: 6000), Host("db-b", port: 6000)])
        #expect(Host("::1", port: 5434).description == "[::1]:5434" && Host("db-a").description == "db-a:5432")
    }

    @Test(
        "bad URLs are refused without showing the password",
        arguments: [
            "sqlite:///x.sqlite", "postgres://:hunter2@host/db", "postgres://u:hunter2@/db",
            "postgres://u:hunter2@h/db?sslmode=sometimes", "postgres://u:hunter2@h/db?schema=Drop;Table",
            "postgres://u:hunter2@h/db?pool=0", "postgres://u:hunter2@h/db?connect_timeout=0",
            "postgres://u:hunter2@h/db?connect_timeout=soon", "postgres://u:hunter2@h/db?query_timeout=0",
            "postgres://u:hunter2@h/db?query_timeout=forever", "postgres://u:hunter2@h1,,h2/db",
            "postgres://u:hunter2@h1:99999,h2/db", "postgres://u:hunter2@h1,h2:x/db",
            "postgres://u:hunter2@/db?host=a,b&port=1,2,3", "postgres://u:hunter2@h/db?silent_connection_watch=maybe", "postgres://u:hunter2@h1,h2/db?target_session_attrs=primary",
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
