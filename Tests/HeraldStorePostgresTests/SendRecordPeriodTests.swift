import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import PostgresNIO
import Testing

/// Retention by the piece on PostgreSQL (migration 31, ``SendRecordPeriods``): a period's send records are partitions
/// that retention drops whole once every send of the period finished before the cutoff.
@Suite("PostgreSQL store: periods of send records", .timeLimit(.minutes(3)))
struct SendRecordPeriodTests {
    static let day: TimeInterval = 86_400

    @Test(
        "a period's partitions go whole once all its sends finished before the cutoff; a running send holds its period and its finished sends' rows wait for the drop; the open period's go row by row",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func periodsDropWhole() async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let client = PostgresClient(configuration: try PostgresStore.Configuration(url: url).client)
        let clock = ManualWallClock()
        try await withCleanup({ await fixture.cleanup() }) {
            try await StoreConformance.withRunning(try fixture.open(clock)) { store in
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask { await client.run() }
                    defer { group.cancelAll() }
                    let tables = { try await Self.partitions(of: "send_outcomes", in: schema, client) }
                    #expect(try await tables() == ["send_outcomes_p0", "send_outcomes_p1"], "as the migration left them")
                    #expect(try await !store.rollSendRecordPeriod(every: .seconds(86_400)), "the first run starts period 1")

                    let finished = try await Self.send("finished", recorded: 1...6, in: store, clock: clock)
                    _ = try await store.updateSend(finished.id, SendUpdate(status: .completed))
                    let running = try await Self.send("running", recorded: 11...13, in: store, clock: clock)
                    #expect(try await !store.rollSendRecordPeriod(every: .seconds(86_400)), "a period lasts a day")

                    clock.advance(by: .seconds(Self.day + 1))
                    #expect(try await store.rollSendRecordPeriod(every: .seconds(86_400)))
                    #expect(try await tables() == ["send_outcomes_p0", "send_outcomes_p1", "send_outcomes_p2"])
                    let later = try await Self.send("later", recorded: 21...23, in: store, clock: clock)
                    _ = try await store.updateSend(later.id, SendUpdate(status: .completed))
                    let refs = try await Self.refs(of: [finished.id, running.id, later.id], in: schema, client)
                    let period2 = try await Self.firstRef(ofPeriod: 2, in: schema, client)
                    #expect(refs[0] < period2 && refs[1] < period2 && refs[2] >= period2, "later's ref is period 2's")

                    // Day 31.5: period 1 ended before the cutoff (day 1.5), but its running send holds it, and its
                    // finished send's records wait for the drop. Period 0 (no send) goes; period 2 is open: its
                    // finished send's records go row by row.
                    clock.advance(by: .seconds(Self.day * 30.5 - 1))
                    var cutoff = clock.now().addingTimeInterval(-30 * Self.day)
                    _ = try await Self.deleteExpiredOutcomes(before: cutoff, in: store)
                    #expect(try await tables() == ["send_outcomes_p1", "send_outcomes_p2"])
                    #expect(try await Self.recorded(finished, in: store) == 6, "waits for its period's drop")
                    #expect(try await Self.recorded(running, in: store) == 3)
                    #expect(try await Self.recorded(later, in: store) == 0, "the open period's rows go one by one")

                    // Once the running send finished before the cutoff, its period goes whole, with both sends'
                    // records; the sends are marked, so that
                    // retention of sends can delete them.
                    _ = try await store.updateSend(running.id, SendUpdate(status: .completed))
                    clock.advance(by: .seconds(Self.day * 31))
                    cutoff = clock.now().addingTimeInterval(-30 * Self.day)
                    let deleted = try await Self.deleteExpiredOutcomes(before: cutoff, in: store)
                    #expect(try await tables() == ["send_outcomes_p2"])
                    #expect(try await Self.partitions(of: "send_acceptances", in: schema, client) == ["send_acceptances_p2"])
                    #expect(deleted == 6 + 3, "the outcomes of both sends' devices")
                    #expect(try await Self.recorded(finished, in: store) == 0)
                    #expect(try await Self.recorded(running, in: store) == 0)
                    #expect(try await Self.deleteExpired(.receiptEvents, before: cutoff, in: store) == 0)
                    #expect(try await Self.deleteExpired(.sends, before: cutoff, in: store) == 3)

                    // A new send after the drops records into the open period.
                    let last = try await Self.send("last", recorded: 31...32, in: store, clock: clock)
                    #expect(try await Self.recorded(last, in: store) == 2)
                }
            }
        }
    }

    @Test(
        "migration 31 keeps the records made before it in partition 0, readable as before, and the sends after it record into partition 1",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func migrationKeepsRecords() async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let client = PostgresClient(configuration: try PostgresStore.Configuration(url: url).client)
        let clock = ManualWallClock()
        try await withCleanup({ await fixture.cleanup() }) {
            try await StoreConformance.withRunning(try fixture.open(clock), migrate: false) { store in
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask { await client.run() }
                    defer { group.cancelAll() }
                    let upgradable = try #require(store as? any VersionedMigrations)
                    try await upgradable.migrate(through: 30)
                    // Today's code writes the columns later migrations give `sends`: they stand in for the records
                    // of a Herald of version 30 (what is checked is where its outcomes go), then leave for the
                    // migrations that add them.
                    let laterSendColumns = StoreSchema.migrations.filter { $0.version > 30 }.flatMap(\.statements)
                        .filter { $0.hasPrefix("ALTER TABLE sends ADD COLUMN ") }
                    for statement in laterSendColumns {
                        let added = statement.replacingOccurrences(of: "ALTER TABLE sends", with: "ALTER TABLE \(schema).sends")
                        try await client.query(PostgresQuery(unsafeSQL: added))
                    }
                    let before = try await Self.send("before", recorded: 1...5, in: store, clock: clock)
                    let outcomes = try await store.outcomes(of: before.id, after: nil, limit: 10).outcomes
                    for statement in laterSendColumns {
                        let column = statement.dropFirst("ALTER TABLE sends ADD COLUMN ".count).split(separator: " ")[0]
                        try await client.query(PostgresQuery(unsafeSQL: "ALTER TABLE \(schema).sends DROP COLUMN \(column)"))
                    }

                    try await store.migrate()
                    #expect(try await Self.partitions(of: "send_outcomes", in: schema, client) == ["send_outcomes_p0", "send_outcomes_p1"])
                    #expect(try await store.outcomes(of: before.id, after: nil, limit: 10).outcomes == outcomes)
                    #expect(try await store.deliveryTrace(of: before.id, to: StoreConformance.token(2)).outcome == outcomes[1])
                    let after = try await Self.send("after", recorded: 1...3, in: store, clock: clock)
                    #expect(try await Self.recorded(after, in: store) == 3)
                    let refs = try await Self.refs(of: [before.id, after.id], in: schema, client)
                    #expect(try await refs[1] >= Self.firstRef(ofPeriod: 1, in: schema, client) && refs[0] < refs[1])
                }
            }
        }
    }

    /// A running send with outcomes recorded for devices `numbers`: first-try acceptances (kept in batches) but every
    /// third device, rejected (a row).
    static func send(_ name: String, recorded numbers: ClosedRange<Int>, in store: any Store, clock: ManualWallClock)
        async throws -> SendRecord
    {
        let send = try await store.createSend(NewSend(target: "tag \(name)", summary: name, status: .running))
        let outcomes = numbers.map { n in
            n.isMultiple(of: 3)
                ? StoreConformance.outcome(n, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: clock.now())
                : StoreConformance.outcome(
                    n, .accepted(apnsID: APNSID.derived(send: send.id, token: StoreConformance.token(n))), at: clock.now())
        }
        _ = try await store.recordOutcomes(outcomes, for: send.id, checkpoint: nil)
        return send
    }

    static func recorded(_ send: SendRecord, in store: any Store) async throws -> Int {
        try await store.outcomes(of: send.id, after: nil, limit: 100).outcomes.count
    }

    static func deleteExpiredOutcomes(before cutoff: Date, in store: any Store) async throws -> Int {
        try await deleteExpired(.outcomes, before: cutoff, in: store)
    }

    static func deleteExpired(_ kind: RetentionKind, before cutoff: Date, in store: any Store) async throws -> Int {
        var deleted = 0
        while true {
            let batch = try await store.deleteExpired(kind, before: cutoff, limit: 100)
            deleted += batch.deleted
            if batch.finished { return deleted }
        }
    }

    /// The partitions of a table, by name.
    static func partitions(of table: String, in schema: String, _ client: PostgresClient) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
            JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace \
            WHERE n.nspname = \(schema) AND p.relname = \(table) ORDER BY c.relname
            """)
        var names: [String] = []
        for try await name in rows.decode(String.self) { names.append(name) }
        return names
    }

    static func refs(of sends: [SendID], in schema: String, _ client: PostgresClient) async throws -> [Int64] {
        var refs: [Int64] = []
        for send in sends {
            let rows = try await client.query(
                "SELECT ref FROM \(unescaped: schema).sends WHERE id = \(send.description)")
            for try await ref in rows.decode(Int64.self) { refs.append(ref) }
        }
        return refs
    }

    static func firstRef(ofPeriod period: Int64, in schema: String, _ client: PostgresClient) async throws -> Int64 {
        let rows = try await client.query(
            "SELECT first_ref FROM \(unescaped: schema).send_record_periods WHERE period = \(period)")
        for try await ref in rows.decode(Int64.self) { return ref }
        throw StoreError(.corruptRecord, "no period \(period)")
    }
}
