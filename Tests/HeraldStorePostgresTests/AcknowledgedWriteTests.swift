import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

/// A write the store answers is a write the database committed: a commit that fails (a deferred constraint, a
/// synchronous standby that never confirms, a connection lost during it) is the caller's error, and in a group commit
/// only the caller's. Until 2026-12, a write of one statement ran without a transaction, and postgres-nio answers such a
/// statement at its `CommandComplete`, before the commit that follows it: a failed commit went unnoticed.
@Suite(
    "PostgreSQL: a write answered is a write committed", .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"),
    .timeLimit(.minutes(2)))
struct AcknowledgedWriteTests {
    /// Devices whose token ends in `ff` (devices 255, 511, 767, …) are refused when their transaction commits.
    static func refuseAtCommit(_ own: OwnConnection) async throws {
        let schema = own.schema
        for statement in [
            """
            CREATE FUNCTION \(schema).refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF right(NEW.token, 2) = 'ff' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NEW; END $$
            """,
            """
            CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT OR UPDATE ON \(schema).devices \
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION \(schema).refuse_at_commit()
            """,
        ] {
            try await own.connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "test"))
        }
    }

    @Test("a registration whose commit fails is refused and stores nothing; the next ones are answered and stored")
    func loneCommitFailure() async throws {
        try await RegistrationGroupCommitTests.withCase { store, own, _ in
            try await Self.refuseAtCommit(own)
            await #expect(throws: StoreError.self) { _ = try await store.upsert(StoreConformance.registration(255)) }
            #expect(try await own.userID(of: StoreConformance.token(255)) == nil)
            for n in 1...3 {
                _ = try await store.upsert(StoreConformance.registration(n))
                #expect(try await own.userID(of: StoreConformance.token(n)) != nil, "device \(n) is stored")
            }
        }
    }

    @Test("in a burst of 60 registrations, the 3 whose commit fails are refused alone: every one answered is stored")
    func burst() async throws {
        try await RegistrationGroupCommitTests.withCase { store, own, _ in
            try await Self.refuseAtCommit(own)
            let numbers = Array(1...57) + [255, 511, 767]
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for n in numbers {
                    group.addTask { (n, (try? await store.upsert(StoreConformance.registration(n))) != nil) }
                }
                var results: [Int: Bool] = [:]
                for await (n, stored) in group { results[n] = stored }
                return results
            }
            for n in numbers {
                let refused = n % 256 == 255
                #expect(results[n] == !refused, "device \(n) is answered \(refused ? "an error" : "stored")")
                let stored = try await own.userID(of: StoreConformance.token(n)) != nil
                #expect(stored == !refused, "device \(n) is \(refused ? "not " : "")in the database")
            }
            // Later registrations are answered.
            _ = try await store.upsert(StoreConformance.registration(100))
            #expect(try await own.userID(of: StoreConformance.token(100)) != nil)
        }
    }
}
