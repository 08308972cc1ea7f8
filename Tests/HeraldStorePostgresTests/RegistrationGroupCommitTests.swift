import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import HeraldStorePostgres

/// Registrations stored by group commit: batched, each caller answered as if alone, in order, durable.
///
/// Cases that need registrations to share a batch hold `LOCK TABLE devices` from a connection of their own: the batch
/// in flight waits for it, the next registrations gather, and the lock's release sends them as one batch.
@Suite(
    "PostgreSQL registrations by group commit", .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"),
    .timeLimit(.minutes(2)))
struct RegistrationGroupCommitTests {
    @Test(
        "200 concurrent registrations go in two calls, and each is answered as if alone: created or updated, tokens moved aside"
    )
    func concurrentRegistrations() async throws {
        try await Self.withCase { store, own, _ in
            let installations = (0..<50).map { _ in UUID() }
            for (offset, installation) in installations.enumerated() {
                _ = try await store.upsert(registration(201 + offset, installation: installation))
            }
            for n in 1...50 { _ = try await store.upsert(registration(n, tags: ["before"])) }
            let registrations = (1...200).map { n in
                switch n {
                case 1...50: registration(n, user: "again", tags: ["after"])
                case 51...100: registration(n)
                case 101...150: registration(n, installation: installations[n - 101])
                default: registration(n, tags: ["new", "batch"])
                }
            }
            let before = store.registrationCommits.value
            let results = try await registerInOneBatch(registrations, on: store, gatheredBy: own)

            for (offset, result) in results.enumerated() {
                let n = offset + 1
                #expect(
                    result.registration.registration == registrations[offset], "token \(n) is answered its own record")
                #expect(result.change == (n <= 50 ? .updated : .created), "token \(n)")
                #expect(result.movedAside == ((101...150).contains(n) ? [token(n + 100)] : []), "token \(n)")
            }
            let statistics = store.registrationCommits.value
            #expect(statistics.batches - before.batches <= 2, "the first call waits for the lock, the rest gather")
            #expect(statistics.largestBatch >= 199)
            #expect(statistics.batchesStoredOneByOne == 0)
            #expect(try await store.count(matching: .topic(topic)) == 200, "tokens 201 to 250 were moved aside")
            #expect(try await all(store, .tag("before")).isEmpty)
            #expect(Set(try await all(store, .tag("after")).map(\.token)) == Set((1...50).map(token)))
            #expect(Set(try await all(store, .tag("batch")).map(\.token)) == Set((151...200).map(token)))
            #expect(try await all(store, .user("again")).count == 50)
        }
    }

    @Test("one token registered 64 times at once ends with one of the bodies, whole: record and tag rows agree")
    func sameTokenConcurrently() async throws {
        try await Self.withCase { store, own, _ in
            let bodies = (0..<64).map { k in
                TokenRegistration(
                    token: token(7), topic: topic, environment: k.isMultiple(of: 2) ? .production : .development,
                    userID: "u\(k)", appVersion: "\(k)", tags: ["t\(k)", "all"])
            }
            let results = try await registerInOneBatch(bodies, on: store, gatheredBy: own)

            #expect(zip(results, bodies).allSatisfy { $0.registration.registration == $1 })
            #expect(results.filter { $0.change == .created }.count == 1, "the first applied creates, the others update")
            let stored = try #require(try await store.device(token(7)))
            let winner = try #require(bodies.firstIndex(of: stored.registration), "the record is one body, whole")
            #expect(try await all(store, .tag("t\(winner)")).map(\.token) == [token(7)])
            for k in bodies.indices where k != winner {
                #expect(try await all(store, .tag("t\(k)")).isEmpty, "no tag row of body \(k) is left")
            }
        }
    }

    @Test("registrations of one token in one batch apply in arrival order: the last wins, the first creates")
    func sameTokenInOrder() async throws {
        try await Self.withCase { store, own, _ in
            let bodies = (0..<6).map { k in
                // Two tokens, interleaved: each keeps its own order when the batch is put in token order.
                registration(k.isMultiple(of: 2) ? 9 : 3, user: "u\(k)", tags: ["t\(k)"])
            }
            let results = try await registerInOneBatch(bodies, on: store, gatheredBy: own, inOrder: true)

            #expect(store.registrationCommits.value.largestBatch == 6, "one batch held all six")
            #expect(results.map(\.change) == [.created, .created, .updated, .updated, .updated, .updated])
            #expect(try await store.device(token(9))?.userID == "u4")
            #expect(try await store.device(token(3))?.userID == "u5")
            #expect(try await all(store, .tag("t4")).map(\.token) == [token(9)])
            #expect(try await all(store, .tag("t5")).map(\.token) == [token(3)])
            #expect(try await all(store, .tag("t0")).isEmpty)
            #expect(try await all(store, .tag("t1")).isEmpty)
        }
    }

    @Test(
        "a registration the database refuses fails only its own caller: the batch is stored again one by one, in order")
    func refusedRegistration() async throws {
        try await Self.withCase { store, own, _ in
            try await store.executeRaw([
                """
                CREATE FUNCTION refuse_registration() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'the test refuses this registration'; END $$
                """,
                """
                CREATE TRIGGER refuse_registration BEFORE INSERT OR UPDATE ON devices FOR EACH ROW \
                WHEN (NEW.topic = 'com.example.refused') EXECUTE FUNCTION refuse_registration()
                """,
            ])
            var registrations = (1...20).map { registration($0, tags: ["t\($0)"]) }
            registrations[9] = registration(10, topic: "com.example.refused")
            registrations[15] = registration(1, user: "later")
            // Queued one after the other: which of token 1's two registrations is later is the test's point, and
            // concurrent submissions arrive in any order (on a loaded machine, the 16th before the 1st).
            let outcomes = try await outcomesInOneBatch(registrations, on: store, gatheredBy: own, inOrder: true)

            #expect(store.registrationCommits.value.batchesStoredOneByOne == 1)
            for (offset, outcome) in outcomes.enumerated() {
                switch outcome {
                case .success(let result):
                    #expect(offset != 9)
                    #expect(result.registration.registration == registrations[offset])
                    #expect(result.change == (offset == 15 ? .updated : .created))
                case .failure(let error):
                    #expect(offset == 9, "only the refused registration fails: \(error)")
                    let storeError = try #require(error as? StoreError)
                    #expect(storeError.code == .backend)
                    #expect(storeError.message.contains("the test refuses this registration"))
                }
            }
            #expect(try await store.device(token(10)) == nil)
            #expect(try await store.count(matching: .topic(topic)) == 18, "tokens 1 to 20 but 10 and 16")
            #expect(try await store.device(token(1))?.userID == "later", "the later registration of token 1 wins")
        }
    }

    @Test("a registration is visible to another connection once its upsert returns: its batch is committed")
    func durableWhenAnswered() async throws {
        try await Self.withCase { store, own, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 1...40 {
                    group.addTask {
                        _ = try await store.upsert(registration(n, user: "u\(n)"))
                        #expect(try await own.userID(of: token(n)) == "u\(n)", "token \(n)")
                    }
                }
                try await group.waitForAll()
            }
            #expect(store.registrationCommits.value.largestBatch > 1, "some registrations shared a batch")
        }
    }

    @Test("registrations waiting when the store stops are answered that it closed; none waits forever")
    func stoppingAnswersWaiting() async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let store = try PostgresStore(url: url, clock: ManualWallClock())
        let running = Task { try await store.run() }
        var own: OwnConnection?
        do {
            try await store.migrate()
            own = try await OwnConnection.open(url: url, schema: schema)
            try await stop(store, running: running, whileWaitingOn: try #require(own))
            try await own?.close()
        } catch {
            try? await own?.close()
            running.cancel()
            await fixture.cleanup()
            throw error
        }
        _ = await running.result
        await fixture.cleanup()
    }

    /// Stops a running store while a batch waits for `own`'s lock and five registrations wait for the next batch.
    private func stop(_ store: PostgresStore, running: Task<Void, any Error>, whileWaitingOn own: OwnConnection)
        async throws
    {
        try await own.lockDevices()
        let blocker = Task { try await store.upsert(registration(100)) }
        try await Self.wait(for: store.registrationCommits) { $0.batches == 1 }
        let answers = Answers()
        for n in 1...5 {
            Task {
                do {
                    let result = try await store.upsert(registration(n))
                    Issue.record("token \(n) was stored after the store stopped: \(result)")
                } catch {
                    answers.add(error)
                }
            }
        }
        try await Self.wait(for: store.registrationCommits) { $0.submitted == 6 }
        running.cancel()
        // The call in flight ends, whether the pool's closing fails it or the lock's release lets it through.
        try await own.commit()
        _ = await blocker.result
        try #require(await answers.errors.wait(until: { $0.count == 5 }) != nil, "cancelled")
        for error in answers.errors.value {
            #expect((error as? StoreError)?.code == .closed, "\(error)")
        }
    }

    // MARK: Helpers

    /// Runs `body` with a running, migrated store on a fresh schema and a connection of its own to that schema.
    static func withCase(
        _ body: @Sendable (PostgresStore, OwnConnection, ManualWallClock) async throws -> Void
    ) async throws {
        let (fixture, url, schema) = try PostgresStoreTests.caseDatabase()
        let clock = ManualWallClock()
        let store = try PostgresStore(url: url, clock: clock)
        do {
            let own = try await OwnConnection.open(url: url, schema: schema)
            do {
                try await StoreConformance.withRunning(store) { _ in try await body(store, own, clock) }
            } catch {
                try? await own.close()
                throw error
            }
            try await own.close()
        } catch {
            await fixture.cleanup()
            throw error
        }
        await fixture.cleanup()
    }

    /// Registers concurrently while `own` holds the devices table, so that they gather into one batch, and returns
    /// each registration's result, in their order.
    /// - Parameter inOrder: Queue them one after the other, so the batch holds them in this order.
    private func registerInOneBatch(
        _ registrations: [TokenRegistration], on store: PostgresStore, gatheredBy own: OwnConnection,
        inOrder: Bool = false
    ) async throws -> [UpsertResult] {
        try await outcomesInOneBatch(registrations, on: store, gatheredBy: own, inOrder: inOrder).map { try $0.get() }
    }

    /// ``registerInOneBatch(_:on:gatheredBy:inOrder:)`` that returns each registration's outcome, failures included.
    private func outcomesInOneBatch(
        _ registrations: [TokenRegistration], on store: PostgresStore, gatheredBy own: OwnConnection,
        inOrder: Bool = false
    ) async throws -> [Result<UpsertResult, any Error>] {
        // A first registration (of another app) takes the call that waits for the lock: every later one waits for
        // the next call.
        try await Self.inOneBatch(
            registrations.count, lockedBy: own, table: "devices", statistics: store.registrationCommits,
            blocker: { _ = try await store.upsert(registration(1_000_000, topic: "com.example.blocker")) },
            inOrder: inOrder, submit: { try await store.upsert(registrations[$0]) })
    }

    /// Submits `count` writes to a group commit concurrently while `own` holds the table they write, so that they
    /// gather into one batch, and returns each one's outcome, failures included, in their order.
    /// - Parameters:
    ///   - statistics: The group commit's statistics.
    ///   - blocker: A first write, which takes the call that waits for the lock: every later one waits for the next.
    ///   - inOrder: Queue them one after the other, so the batch holds them in this order.
    static func inOneBatch<Output: Sendable>(
        _ count: Int, lockedBy own: OwnConnection, table: String, mode: String = "EXCLUSIVE",
        statistics: WatchedState<GroupCommitStatistics>,
        blocker: @escaping @Sendable () async throws -> Void,
        inOrder: Bool, submit: @escaping @Sendable (Int) async throws -> Output
    ) async throws -> [Result<Output, any Error>] {
        try await own.lock(table, mode: mode)
        let start = statistics.value
        let first = Task { try await blocker() }
        try await wait(for: statistics) { $0.batches > start.batches }
        var outcomes: [Int: Result<Output, any Error>] = [:]
        try await withThrowingTaskGroup(of: (Int, Result<Output, any Error>).self) { group in
            for offset in 0..<count {
                group.addTask {
                    do { return (offset, .success(try await submit(offset))) } catch {
                        return (offset, .failure(error))
                    }
                }
                if inOrder { try await wait(for: statistics) { $0.submitted == start.submitted + offset + 2 } }
            }
            try await wait(for: statistics) { $0.submitted == start.submitted + count + 1 }
            try await own.commit()
            for try await (offset, outcome) in group { outcomes[offset] = outcome }
        }
        _ = try await first.value
        return (0..<count).map { outcomes[$0]! }
    }

    /// Waits until the group commit's statistics satisfy `condition`: it wakes on each change, never polls. The suite's
    /// time limit ends a wait that never comes.
    static func wait(
        for statistics: WatchedState<GroupCommitStatistics>,
        until condition: @escaping @Sendable (GroupCommitStatistics) -> Bool
    ) async throws {
        try #require(await statistics.wait(until: condition) != nil, "cancelled while waiting for the group commit")
    }

    private func registration(
        _ n: Int, topic: String = StoreConformance.topic, user: String? = nil, installation: UUID? = nil,
        tags: [String] = []
    ) -> TokenRegistration {
        StoreConformance.registration(n, topic: topic, user: user, installation: installation, tags: tags)
    }

    private func token(_ n: Int) -> DeviceToken { StoreConformance.token(n) }

    private var topic: String { StoreConformance.topic }

    private func all(_ store: PostgresStore, _ query: DeviceQuery) async throws -> [DeviceRegistration] {
        try await StoreConformance.all(store, query)
    }
}

/// A connection of a test's own to a case's schema, outside the store's pool: it sees what another client of the
/// database sees, and holds locks that the store's registrations wait for.
struct OwnConnection: Sendable {
    let connection: PostgresConnection
    let schema: String
    private static let logger = Logger(label: "herald.tests.own-connection")

    static func open(url: String, schema: String) async throws -> OwnConnection {
        let client = try PostgresStore.Configuration(url: url).client
        let configuration = PostgresConnection.Configuration(
            host: try #require(client.host), port: client.port ?? 5432, username: client.username,
            password: client.password, database: client.database, tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        return OwnConnection(connection: connection, schema: schema)
    }

    /// Begins a transaction that holds the devices table: registrations wait until ``commit()``.
    func lockDevices() async throws {
        try await lock("devices")
    }

    /// Begins a transaction that holds a table: writes to it (and reads too, in `ACCESS EXCLUSIVE` mode) wait until
    /// ``commit()``.
    func lock(_ table: String, mode: String = "EXCLUSIVE") async throws {
        try await connection.query("BEGIN", logger: Self.logger)
        try await connection.query(
            PostgresQuery(unsafeSQL: "LOCK TABLE \(schema).\(table) IN \(mode) MODE"), logger: Self.logger)
    }

    func commit() async throws {
        try await connection.query("COMMIT", logger: Self.logger)
    }

    /// A token's stored user id, as this connection sees it; `nil` when it sees no such token.
    func userID(of token: DeviceToken) async throws -> String? {
        let rows = try await connection.query(
            PostgresQuery(
                unsafeSQL: "SELECT coalesce(user_id, '') FROM \(schema).devices WHERE token = $1",
                binds: {
                    var binds = PostgresBindings()
                    binds.append(token.hex)
                    return binds
                }()),
            logger: Self.logger)
        for try await row in rows { return try row.decode(String.self) }
        return nil
    }

    func close() async throws {
        try await connection.close()
    }
}

/// The errors callers got, gathered from their tasks.
private final class Answers: Sendable {
    let errors = WatchedState<[any Error]>([], readyWhen: { _ in false })

    func add(_ error: any Error) { errors.update { $0.append(error) } }
}
