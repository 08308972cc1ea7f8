import Foundation
import GRDB
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldStoreSQLite

@Suite("SQLite store")
struct SQLiteStoreTests {
    /// A fresh database file in its own temporary folder.
    static func fixture(synchronous: SQLiteStore.Configuration.Synchronous = .full) throws -> (StoreFixture, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("herald.sqlite").path
        let fixture = StoreFixture(
            open: { clock in
                try SQLiteStore(configuration: .init(location: .file(path), synchronous: synchronous, clock: clock))
            },
            cleanup: { try? FileManager.default.removeItem(at: folder) })
        return (fixture, folder)
    }

    @Test("behaves as every store must", arguments: StoreConformance.cases)
    func conformance(_ check: StoreConformance.Case) async throws {
        try await StoreConformance.run(check, on: Self.fixture().0)
    }

    @Test("a database of schema 6 keeps its sends, outcomes and devices through every later migration; its sends can be cancelled and its devices registered again")
    func upgradeToReceipts() async throws {
        try await StoreConformance.checkUpgradeToReceipts(on: Self.fixture().0)
    }

    @Test(
        "a database of schema 26 keeps every outcome through the compact outcomes (27): tokens, apns-ids, order, trace, deliveries, receipts"
    )
    func upgradeToCompactOutcomes() async throws {
        try await StoreConformance.checkUpgradeToCompactOutcomes(on: Self.fixture().0)
    }

    @Test(
        "an in-memory store behaves the same for a single instance",
        arguments: [
            "an upsert creates a registration, and the next one updates it completely",
            "remove deletes a token and its tags, and says whether it existed",
            "concurrent upserts of one token leave one record and raise no error",
        ])
    func memory(_ name: String) async throws {
        let check = try #require(StoreConformance.cases.first { $0.name == name }, "no conformance case \"\(name)\"")
        let fixture = StoreFixture(
            open: { clock in try SQLiteStore(url: "sqlite::memory:", clock: clock) }, cleanup: {})
        try await StoreConformance.run(check, on: fixture)
    }

    @Test("the database file is in WAL mode; its writer commits with the synchronous level configured and journals savepoints in memory", arguments: [SQLiteStore.Configuration.Synchronous.full, .normal])
    func walFile(_ synchronous: SQLiteStore.Configuration.Synchronous) async throws {
        let (fixture, folder) = try Self.fixture(synchronous: synchronous)
        try await withCleanup({ await fixture.cleanup() }) {
            let store = try fixture.open(ManualWallClock())
            try await StoreConformance.withRunning(store) { store in
                _ = try await store.upsert(StoreConformance.registration(1))
                // GRDB's pool sets NORMAL on its writer when it switches the file to WAL, after the connection's own setup.
                let sqlite = try #require(store as? SQLiteStore)
                #expect(try await sqlite.writerPragma("synchronous") == (synchronous == .full ? 2 : 1))
                #expect(try await sqlite.writerPragma("temp_store") == 2, "savepoint journals in memory")
                // While the store is open its commits go to the write-ahead log beside the file.
                let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(files.contains("herald.sqlite-wal") && files.contains("herald.sqlite"), "\(files)")
            }
            let header = try Data(contentsOf: folder.appendingPathComponent("herald.sqlite")).prefix(20)
            #expect(header.count == 20 && header[18] == 2 && header[19] == 2, "WAL files carry format version 2")
        }
    }

    @Test("rows read through SQLite's C API keep text exactly, and a column edited by hand to another type is a corrupt record, not a crash")
    func rowReader() async throws {
        let (fixture, _) = try Self.fixture()
        let store = try fixture.open(ManualWallClock())
        try await StoreConformance.withRunning(store) { store in
            var registration = StoreConformance.registration(1, user: "ユーザー 🚀", languages: ["de-CH", "ja"])
            registration.appVersion = "2.0 β"
            _ = try await store.upsert(registration)
            let device = try #require(try await store.device(registration.token))
            #expect(device.userID == "ユーザー 🚀" && device.appVersion == "2.0 β")
            #expect(device.preferredLanguages == ["de-CH", "ja"])

            let sqlite = try #require(store as? SQLiteStore)
            try await sqlite.executeRaw(["UPDATE devices SET app_version = x'00ff' WHERE token = '\(registration.token.hex)'"])
            let error = await #expect(throws: StoreError.self) { try await store.device(registration.token) }
            #expect(error?.code == .corruptRecord)
        }
        await fixture.cleanup()
    }

    @Test("reads by key on the calling thread see every committed write, stay within their connection limit under load, and leave no WAL file behind after close")
    func quickReads() async throws {
        let (fixture, folder) = try Self.fixture()
        let store = try fixture.open(ManualWallClock())
        let sqlite = try #require(store as? SQLiteStore)
        let readers = try #require(sqlite.quickReaders)
        try await StoreConformance.withRunning(store) { store in
            // A connection kept between reads must not keep reading an old snapshot.
            for round in 1...20 {
                _ = try await store.upsert(StoreConformance.registration(1, user: "user-\(round)"))
                #expect(try await store.device(StoreConformance.token(1))?.userID == "user-\(round)")
            }
            for index in 2...40 { _ = try await store.upsert(StoreConformance.registration(index)) }
            // More reads at once than connections: those that find none free go through the pool.
            let found = try await withThrowingTaskGroup(of: Bool.self) { group in
                for round in 0..<400 {
                    group.addTask { try await store.device(StoreConformance.token(1 + round % 40)) != nil }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(found == 400)
            #expect(readers.openCount <= readers.limit && readers.openCount > 0)
        }
        #expect(readers.openCount == 0, "closing the store closes its idle quick readers")
        await #expect(throws: StoreError.self) { try await store.device(StoreConformance.token(1)) }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!files.contains("herald.sqlite-wal"), "the writer closed last and removed the WAL file: \(files)")
        await fixture.cleanup()
    }

    @Test("SQL written with $1, $2 … gets SQLite's ?1, ?2 …; PostgreSQL's is kept; text around them is unchanged")
    func placeholders() {
        let sql = "SELECT 'é—🚀' || $1, $2 FROM devices WHERE token = $10"
        #expect(SQLStatement(.sqlite, sql).sql == "SELECT 'é—🚀' || ?1, ?2 FROM devices WHERE token = ?10")
        #expect(SQLStatement(.postgres, sql).sql == sql)
        #expect(SQLStatement(.sqlite, "").sql.isEmpty)
    }

    @Test("concurrent registrations are committed in shared transactions, each with its own result")
    func groupCommit() async throws {
        let (fixture, _) = try Self.fixture()
        let store = try fixture.open(ManualWallClock())
        try await StoreConformance.withRunning(store) { store in
            _ = try await store.upsert(StoreConformance.registration(1))
            let changes = try await withThrowingTaskGroup(of: (Int, UpsertResult.Change).self) { group in
                for index in 1...600 {
                    group.addTask { (index, try await store.upsert(StoreConformance.registration(index)).change) }
                }
                return try await group.reduce(into: [Int: UpsertResult.Change]()) { $0[$1.0] = $1.1 }
            }
            #expect(changes.count == 600 && changes[1] == .updated)
            #expect(changes.filter { $0.value == .created }.count == 599)
            #expect(try await store.count(matching: .topic(StoreConformance.registration(1).topic)) == 600)
        }
        await fixture.cleanup()
    }

    /// `scripts/bench-server.sh register sqlite` measures SQLite alone with this script as its ceiling: it must write
    /// what a registration writes, in the schema as migrated now, or the ceiling measures something else.
    @Test("the SQLite-alone benchmark writes registrations the store reads back as registrations")
    func sqliteAloneBenchmark() async throws {
        let (fixture, folder) = try Self.fixture()
        try await withCleanup({ await fixture.cleanup() }) {
            try await StoreConformance.withRunning(try fixture.open(ManualWallClock())) { _ in }
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../scripts/bench/sqlite-registrations.py"
            ).standardized.path
            let database = folder.appendingPathComponent("herald.sqlite").path
            let result = try await ProcessRunner.run("python3", [script, database, "--count", "300", "--batch", "16"])
            #expect(result.status == 0, "\(result.standardError)")
            let figures = result.standardOutput.split(separator: " ").compactMap { Double($0.filter { !$0.isWhitespace }) }
            // The kernel accounts system time in ticks: 300 registrations may take less than one, so it may read 0.
            #expect(
                figures.count == 3 && figures[0] > 0 && figures[1] > 0 && figures[2] >= 0,
                "rate, CPU and system time: \(result.standardOutput)")

            try await StoreConformance.withRunning(try fixture.open(ManualWallClock())) { store in
                let app = DeviceQuery.topic("com.example.app")
                #expect(try await store.count(matching: app) == 300)
                let page = try await store.devices(matching: app, after: nil, limit: 300)
                #expect(page.devices.count == 300)
                #expect(page.devices.allSatisfy { $0.environment == .development && $0.tokenKind == .device })
                let first = try #require(page.devices.first)
                #expect(try await store.device(first.token) == first)
                // A registration of the same token through the store is an update of the row the script wrote.
                let again = try await store.upsert(
                    TokenRegistration(token: first.token, topic: first.topic, environment: .development))
                #expect(again.change == .updated)
            }
        }
    }

    @Test(
        "database URLs name a file or memory",
        arguments: [
            ("sqlite:///var/lib/herald/herald.sqlite", "/var/lib/herald/herald.sqlite"),
            ("sqlite://herald.sqlite", "herald.sqlite"),
            ("sqlite:data/herald.sqlite", "data/herald.sqlite"),
            ("sqlite::memory:", ":memory:"),
        ])
    func urls(url: String, location: String) throws {
        #expect(try SQLiteStore.Configuration(url: url).location.description == location)
    }

    @Test("other URLs are refused with a hint", arguments: ["postgres://u:hunter2@h/db", "sqlite://", "herald.sqlite"])
    func badURLs(url: String) {
        let error = #expect(throws: StoreError.self) { try SQLiteStore.Configuration(url: url) }
        #expect(error?.code == .invalidURL && error?.description.contains("sqlite:") == true)
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test("an unopenable file is reported as unavailable")
    func unopenable() {
        let error = #expect(throws: StoreError.self) {
            try SQLiteStore(configuration: .init(location: .file("/nonexistent-folder/x/herald.sqlite")))
        }
        #expect(error?.code == .unavailable)
    }
}

@Suite("SQLite store: errors")
struct SQLiteStoreErrorTests {
    @Test("a statement interrupted because its task was cancelled is a cancellation; a busy database or a full disk is transient, a constraint is not")
    func interruptedIsCancelled() {
        #expect(SQLiteStore.map(DatabaseError(resultCode: .SQLITE_INTERRUPT), "read registrations") is CancellationError)
        let busy = SQLiteStore.map(DatabaseError(resultCode: .SQLITE_BUSY), "store a registration") as? StoreError
        #expect(busy?.code == .unavailable && busy?.isTransient == true)
        let full = SQLiteStore.map(DatabaseError(resultCode: .SQLITE_FULL), "store a registration") as? StoreError
        #expect(full?.code == .diskFull && full?.isTransient == true)
        #expect(full?.message.contains("disk") == true, "\(String(describing: full))")
        let constraint = SQLiteStore.map(
            DatabaseError(resultCode: .SQLITE_CONSTRAINT_UNIQUE), "store a registration") as? StoreError
        #expect(constraint?.code == .backend && constraint?.isTransient == false)
    }

    @Test("a new database gives the space retention frees back to the file system; one made without incremental auto-vacuum says it cannot until vacuumed once")
    func reclaimSpace() async throws {
        let (fixture, folder) = try SQLiteStoreTests.fixture()
        try await withCleanup({ await fixture.cleanup() }) {
            let clock = ManualWallClock()
            try await StoreConformance.withRunning(try fixture.open(clock)) { store in
                let sqlite = try #require(store as? SQLiteStore)
                #expect(try await sqlite.autoVacuumMode() == 2, "incremental from creation")
                let send = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
                let outcomes = (1...4_000).map { StoreConformance.outcome($0, .accepted(apnsID: APNSID()), at: clock.now()) }
                for chunk in stride(from: 0, to: outcomes.count, by: 1_000) {
                    _ = try await store.recordOutcomes(
                        Array(outcomes[chunk..<chunk + 1_000]), for: send.id, checkpoint: nil)
                }
                _ = try await store.updateSend(send.id, SendUpdate(status: .completed))
                clock.advance(by: .seconds(86_400))
                _ = try await StoreConformance.deleteAll(.outcomes, before: clock.now(), limit: 1_000, on: store)
                var reclaimed: Int64 = 0
                while let bytes = try await store.reclaimSpace(maximumBytes: 256 * 1024), bytes > 0 { reclaimed += bytes }
                #expect(reclaimed > 500_000, "4,000 outcomes' pages given back: \(reclaimed) bytes")
                #expect(try await store.reclaimSpace(maximumBytes: 1 << 20) == 0, "nothing left to give back")
            }

            // A database whose first table came before incremental auto-vacuum was asked for.
            let old = folder.appendingPathComponent("old.sqlite").path
            let queue = try DatabaseQueue(path: old)
            try await queue.write { db in try db.execute(sql: "CREATE TABLE leftover (x INTEGER)") }
            try queue.close()
            let oldFixture = StoreFixture(
                open: { clock in try SQLiteStore(configuration: .init(location: .file(old), clock: clock)) }, cleanup: {})
            try await StoreConformance.withRunning(try oldFixture.open(clock)) { store in
                let sqlite = try #require(store as? SQLiteStore)
                #expect(try await sqlite.autoVacuumMode() == 0)
                #expect(try await store.reclaimSpace(maximumBytes: 1 << 20) == nil, "the file cannot shrink yet")
                #expect(try await sqlite.vacuumIncrementally())
                #expect(try await sqlite.autoVacuumMode() == 2)
                #expect(try await !sqlite.vacuumIncrementally(), "once is enough")
                #expect(try await store.reclaimSpace(maximumBytes: 1 << 20) == 0)
            }
        }
    }
}
