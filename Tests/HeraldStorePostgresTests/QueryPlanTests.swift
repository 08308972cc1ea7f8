import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

/// Plans of the statements whose cost must not grow with the table: a campaign's outcomes are recorded a page at a time,
/// and a plan that reads every outcome per page makes a million-device send quadratic; a sharded send reads each
/// shard's range, and a plan that reads every device per shard makes it quadratic too.
@Suite("PostgreSQL store: query plans")
struct QueryPlanTests {
    static let logger = Logger(label: "herald.test.plans")

    /// `EXPLAIN` of `statement` prepared with `types` and run with `values`, as its generic plan (the one PostgreSQL
    /// keeps for a prepared statement after five runs), on a schema whose `send_outcomes` holds `outcomes` outcomes of
    /// one send, analysed.
    static func genericPlan(
        of statement: String, types: [String], values: (SendID) -> [String], outcomes: Int
    ) async throws -> [String] {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        return try await withCleanup({ await fixture.cleanup() }) {
            let send = try await StoreConformance.withRunning(try fixture.open(ManualWallClock())) { store in
                try await store.createSend(NewSend(target: "topic", summary: "alert push", status: .running))
            }
            let client = PostgresClient(configuration: try PostgresStore.Configuration(url: url).client)
            return try await withThrowingTaskGroup(of: [String].self) { group in
                group.addTask {
                    await client.run()
                    return []
                }
                let plan = try await client.withConnection { connection in
                    for sql in [
                        "SET search_path TO \(schema)",
                        """
                        INSERT INTO send_outcomes (send_ref, seq, at, token, environment, outcome) \
                        SELECT (SELECT ref FROM sends WHERE id = '\(send.id)'), i, 0, \
                        decode(lpad(to_hex(i), 64, '0'), 'hex'), 'production', 'accepted' \
                        FROM generate_series(1, \(outcomes)) AS i
                        """,
                        "ANALYZE send_outcomes",
                        "SET plan_cache_mode = force_generic_plan",
                        "PREPARE checked(\(types.joined(separator: ", "))) AS \(statement)",
                    ] {
                        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
                    }
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE checked(\(values(send.id).joined(separator: ", ")))"),
                        logger: Self.logger)
                    var lines: [String] = []
                    for try await line in rows.decode(String.self) { lines.append(line) }
                    return lines
                }
                group.cancelAll()
                return plan
            }
        }
    }

    @Test(
        "recording a page of outcomes reads the send's last sequence at the primary key's end and its rows in the page's range of tokens: its plan reads no outcome of the table beyond that",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(2)))
    func recordingOutcomes() async throws {
        let outcome = DeliveryOutcome(
            token: try DeviceToken(hex: String(repeating: "ab", count: 32)), environment: .production,
            result: .failed(message: "no answer"), at: Date())
        let read = try #require(OutcomeRecording([outcome], of: SendID()).priorRead(.postgres))
        #expect(PreparedShapes.bySQL[read.sql] != nil, "the read is prepared once per connection")
        // The send; its range of sequence numbers; the rows' range of tokens; development's (none) and production's.
        let plan = try await Self.genericPlan(
            of: read.sql,
            types: ["text", "bigint", "bigint", "bytea", "bytea", "bytea", "bytea", "text", "bytea", "bytea", "text"],
            values: { send in
                [
                    "'\(send)'", "0", "4294967296", "'\\x00'::bytea", "'\\xab'::bytea", "NULL", "NULL", "'development'",
                    "'\\x00'::bytea", "'\\xab'::bytea", "'production'",
                ]
            },
            outcomes: 20_000)
        // The send's records are in partition 1 (migration 31); partition 0, empty here, is pruned when the plan runs.
        let text = plan.joined(separator: "\n")
        #expect(!text.contains("Seq Scan on send_outcomes_p1"), "a page's record reads every outcome:\n\(text)")
        #expect(text.contains("Backward using send_outcomes_p1_pkey"), "the last sequence, from the key's end:\n\(text)")
        #expect(text.contains("send_ref_token_idx on send_outcomes_p1"), "the rows of the page's range, by token:\n\(text)")
    }

    @Test(
        "a shard's statements with the person's rules read the shard's range of the index, not every device; a boundary reads no rule probe; sessions run without JIT",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(2)))
    func shardRange() async throws {
        let (fixture, _, _) = try PostgresStoreTests.caseDatabase()
        let devices = 200_000
        let hex = { (n: Int) in String(repeating: "0", count: 64 - String(n, radix: 16).count) + String(n, radix: 16) }
        let plans = try await withCleanup({ await fixture.cleanup() }) {
            try await StoreConformance.withRunning(try fixture.open(ManualWallClock())) { store in
                let store = try #require(store as? PostgresStore)
                // Odd seeds in development, even in production, as the benchmark's; a tenth opted out of marketing.
                try await store.session("seed") { session in
                    try await session.execute(
                        """
                        INSERT INTO devices (token, topic, environment, token_kind, registered_at, created_at, updated_at) \
                        SELECT lpad(to_hex(i), 64, '0'), '\(StoreConformance.topic)', \
                        CASE WHEN i % 2 = 1 THEN 'development' ELSE 'production' END, 'device', 0, 0, 0 \
                        FROM generate_series(1, \(devices)) AS i
                        """)
                    try await session.execute(
                        """
                        INSERT INTO preference_choices (topic, subject, category, enabled, updated_at) \
                        SELECT '\(StoreConformance.topic)', 't:' || lpad(to_hex(i), 64, '0'), 'marketing', 0, 0 \
                        FROM generate_series(1, \(devices), 10) AS i
                        """)
                    try await session.execute("ANALYZE devices")
                    try await session.execute("ANALYZE preference_choices")
                }
                // The third shard of 10,000 development devices: seeds 40,001 through 60,000, odd.
                let ruled = DeviceQuery.topic(StoreConformance.topic).kinds([.device])
                    .preference(PreferenceFilter(category: "marketing", enabledByDefault: true))
                    .timeZones(DeviceQuery.TimeZoneFilter(zones: [], includesUnset: true, ownQuietHours: [
                        DeviceQuery.ZoneWithOwnQuietHours(zone: nil, quietHours: .off)]))
                    .groupingByOwnQuietHours()
                let shard = ruled.after(DeviceCursor(environment: .development, token: try DeviceToken(hex: hex(39_999))))
                    .through(DeviceCursor(environment: .development, token: try DeviceToken(hex: hex(59_999))))
                let statements =
                    shard.timeZoneStatements(dialect: .postgres) + shard.countStatements(dialect: .postgres)
                    + [shard.pageStatement(after: nil, limit: 1000, dialect: .postgres).statement!]
                let boundary = ruled.boundaryStatement(
                    after: DeviceCursor(environment: .development, token: try DeviceToken(hex: hex(19_999))),
                    count: 10_000, dialect: .postgres)
                // A page deep into the last development shard: from seed 180,001 on, through its end.
                let deepPage = DeviceQuery.topic(StoreConformance.topic).kinds([.device])
                    .through(DeviceCursor(environment: .development, token: try DeviceToken(hex: hex(199_999))))
                    .pageStatement(
                        after: DeviceCursor(environment: .development, token: try DeviceToken(hex: hex(179_999))),
                        limit: 1000, dialect: .postgres
                    ).statement!
                return try await store.session("explain") { session in
                    var plans: [String] = []
                    for (statement, analyze) in statements.map({ ($0, false) }) + [(boundary, false), (deepPage, true)] {
                        var explain = statement
                        explain.sql = (analyze ? "EXPLAIN (ANALYZE, BUFFERS) " : "EXPLAIN ") + statement.sql
                        plans.append(try await session.rows(explain).map { try $0.optionalText(0) ?? "" }.joined(separator: "\n"))
                    }
                    plans.append(try await session.rows("SHOW jit").first?.optionalText(0) ?? "")
                    return plans
                }
            }
        }
        for plan in plans.dropLast(3) {
            #expect(!plan.contains("Seq Scan on devices"), "a shard's statement reads every device:\n\(plan)")
            #expect(plan.contains("Index Cond"), "\(plan)")
        }
        // A page of 1,000 development devices reads about 70 buffers (heap and index); a scan that starts at the
        // shard's start instead of at the cursor reads the index's entries before the cursor too: 2,500.
        let deepPage = plans[plans.count - 2]
        let buffers = try #require(deepPage.firstMatch(of: /Buffers: shared hit=(\d+)(?: read=(\d+))?/), "\(deepPage)")
        let read = Int(buffers.1)! + (buffers.2.flatMap { Int($0) } ?? 0)
        #expect(read < 400, "a page read \(read) buffers:\n\(deepPage)")
        let boundary = plans[plans.count - 3]
        #expect(!boundary.contains("Seq Scan on devices"), "a boundary reads every device:\n\(boundary)")
        #expect(
            !boundary.contains("preference_choices") && !boundary.contains("preference_quiet_hours"),
            "a boundary probes the person's rules:\n\(boundary)")
        #expect(plans.last == "off", "Herald's sessions run without JIT")
    }
}
