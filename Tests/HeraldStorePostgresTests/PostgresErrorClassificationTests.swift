import HeraldStore
import Testing

@testable import HeraldStorePostgres

/// Which server errors the engine waits out (a restart, a failover, a conflict) and which are for good.
@Suite("PostgreSQL store: errors are classified")
struct PostgresErrorClassificationTests {
    @Test(
        "SQLSTATEs of a database away, read-only, out of time, in conflict or out of disk are transient; the rest is not",
        arguments: [
            ("40001", StoreError.Code.conflict), ("40P01", .conflict), ("25006", .readOnly), ("57014", .timedOut),
            ("53100", .diskFull), ("57P01", .unavailable), ("57P02", .unavailable), ("57P03", .unavailable),
            ("53300", .unavailable), ("08006", .unavailable), ("08001", .unavailable),
        ])
    func transient(_ sqlState: String, _ code: StoreError.Code) {
        let (classified, advice) = PostgresStore.classify(sqlState: sqlState)
        #expect(classified == code)
        #expect(StoreError(classified, "x").isTransient)
        #expect(!advice.isEmpty)
    }

    @Test("a constraint, a syntax error or an unknown state is permanent", arguments: ["23505", "23503", "42601", "XX000", ""])
    func permanent(_ sqlState: String) {
        let (classified, advice) = PostgresStore.classify(sqlState: sqlState)
        #expect(classified == .backend && !StoreError(classified, "x").isTransient && advice.isEmpty)
    }
}
