import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

/// Plans of the statements whose cost must not grow with the table: a campaign's outcomes are recorded a page at a time,
/// and a plan that reads every outcome per page makes a million-device send quadratic.
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
        "recording a page of outcomes finds the send's last sequence at the primary key's end: its plan reads no outcome of the table beyond that",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"), .timeLimit(.minutes(2)))
    func recordingOutcomes() async throws {
        let token = String(repeating: "ab", count: 32)
        let plan = try await Self.genericPlan(
            of: StoreSQL.recordOutcomesSQL,
            types: ["bigint[]", "text[]", "text[]", "text[]", "text[]", "bigint[]", "text[]", "bigint[]", "text[]",
                    "bigint[]", "text[]", "text[]", "text", "text", "bigint"],
            values: { send in
                ["'{1}'", "'{\(token)}'", "'{production}'", "'{accepted}'"] + Array(repeating: "'{NULL}'", count: 5)
                    + ["'{0}'", "'{NULL}'", "'{NULL}'", "'\(send)'", "NULL", "0"]
            },
            outcomes: 20_000)
        let text = plan.joined(separator: "\n")
        #expect(!text.contains("Seq Scan on send_outcomes"), "a page's record reads every outcome:\n\(text)")
        #expect(text.contains("Backward using send_outcomes_compact_pkey"), "the last sequence, from the key's end:\n\(text)")
    }
}
