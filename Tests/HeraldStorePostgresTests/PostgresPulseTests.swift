import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOPosix
import PostgresNIO
import Testing

@testable import HeraldStorePostgres

/// The pulse (`SELECT 1` on a connection of its own) finds a database that stopped answering within a second, and its
/// return at once; an answer to an operation that began before the database went away does not end the away state.
@Suite("PostgreSQL store: the pulse", .timeLimit(.minutes(1)))
struct PostgresPulseTests {
    @Test("an answer to an operation that began before the database went away does not end the away state")
    func staleAnswerKeepsAway() {
        let availability = DatabaseAvailability()
        let before = availability.mark()
        #expect(availability.answered(since: before) == nil, "not away: nothing ends")
        #expect(availability.lost())
        #expect(!availability.lost(), "away already")
        // The statement answered just before the restart, its answer handled just after: says nothing of now.
        #expect(availability.answered(since: before) == nil)
        #expect(availability.isAway)
        let after = availability.mark()
        #expect(availability.answered(since: after) != nil)
        #expect(!availability.isAway)
    }

    @Test("the pulse asks when an operation waits in silence, when all is idle, and on every tick while away")
    func pulseAsks() {
        let availability = DatabaseAvailability()
        #expect(availability.needsPulse(operationsWaiting: false, quiet: .zero, idle: .seconds(60)), "no answer yet")
        availability.answered(since: availability.mark())
        #expect(!availability.needsPulse(operationsWaiting: true, quiet: .seconds(60), idle: .seconds(60)))
        #expect(availability.needsPulse(operationsWaiting: true, quiet: .zero, idle: .seconds(60)))
        #expect(!availability.needsPulse(operationsWaiting: false, quiet: .zero, idle: .seconds(60)))
        #expect(availability.needsPulse(operationsWaiting: false, quiet: .seconds(60), idle: .zero))
        availability.lost()
        #expect(availability.needsPulse(operationsWaiting: false, quiet: .seconds(60), idle: .seconds(60)))
    }

    @Test("a refused TCP connection says the server is down; a listening port does not")
    func refusedConnection() async throws {
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        #expect(!(await DatabasePulse.refuses(.init("127.0.0.1", port: port))))
        try await listener.close()
        #expect(await DatabasePulse.refuses(.init("127.0.0.1", port: port)))
    }

    @Test(
        "a partition fails the operation waiting on it within the pulse, not at its limit; its end is found at once",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func partitionFound() async throws {
        try await ProxiedPostgresStore.with(configure: Self.pastTheSuitesLimits) { store, proxy in
            let token = StoreConformance.token(1)
            _ = try await store.upsert(TokenRegistration(token: token, topic: "com.example.app", environment: .production))
            let before = store.pulseStatistics.value
            proxy.setMode(.blackhole)
            // Its own limits are past the suite's: only the pulse can end it in time.
            let error = await #expect(throws: StoreError.self) { try await store.device(token) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(store.isDatabaseAway)
            #expect(store.pulseStatistics.value.foundAway == before.foundAway + 1)
            proxy.setMode(.pass)
            await store.pulseStatistics.wait { $0.foundBack > before.foundBack }
            #expect(try await store.device(token)?.token == token)
        }
    }

    @Test(
        "after an outage the pool is renewed, so that postgres-nio's backoff does not hold the database's return",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func poolRenewedOnReturn() async throws {
        try await ProxiedPostgresStore.with(configure: Self.pastTheSuitesLimits) { store, proxy in
            let token = StoreConformance.token(2)
            _ = try await store.upsert(TokenRegistration(token: token, topic: "com.example.app", environment: .production))
            let before = store.pulseStatistics.value
            proxy.setMode(.refuse)
            // Found away, then a second ask unanswered: away for more than a second (each waits 2 s for a connection).
            await store.pulseStatistics.wait {
                $0.foundAway > before.foundAway && $0.unanswered >= before.unanswered + 2
            }
            proxy.setMode(.pass)
            await store.pulseStatistics.wait { $0.foundBack > before.foundBack }
            #expect(store.pulseStatistics.value.renewedPools == before.renewedPools + 1)
            #expect(!store.isDatabaseAway)
            #expect(try await store.device(token)?.token == token)
        }
    }

    @Test(
        "connections gone silent beside a database that answers new ones: the operation waiting on one fails within the pulse, saying so; the database is not away",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func silentPathFound() async throws {
        try await ProxiedPostgresStore.with(configure: Self.pastTheSuitesLimits) { store, proxy in
            let token = StoreConformance.token(3)
            _ = try await store.upsert(TokenRegistration(token: token, topic: "com.example.app", environment: .production))
            // On a machine too loaded to open the new connection within the pulse's second, the pulse finds the
            // database away instead (the operation fails just as fast): three tries, one must tell the path silent.
            var told = false
            for _ in 0..<3 where !told {
                // The pulse's own connection is open: it goes silent with the pool's.
                let answeredBefore = store.pulseStatistics.value.answered
                await store.pulseStatistics.wait { $0.answered > answeredBefore }
                let before = store.pulseStatistics.value
                // Every connection open now goes silent; those made after it work.
                proxy.setMode(.silent)
                proxy.setMode(.pass)
                // Its own limits are past the suite's and the silent-connection watch is off: only the pulse ends it.
                let error = await #expect(throws: StoreError.self) { try await store.device(token) }
                #expect(error?.code == .timedOut, "\(String(describing: error))")
                let after = store.pulseStatistics.value
                if after.silentPaths > before.silentPaths {
                    told = true
                    #expect(error?.message.contains("went silent") == true, "\(String(describing: error))")
                    #expect(after.foundAway == before.foundAway && !store.isDatabaseAway, "new connections work")
                    #expect(after.renewedPools == before.renewedPools + 1)
                } else {
                    #expect(after.foundAway == before.foundAway + 1)
                    await store.pulseStatistics.wait { $0.foundBack > before.foundBack }
                }
                #expect(try await store.device(token)?.token == token)
            }
            #expect(told, "the pulse never told a silent path from a database away")
        }
    }

    @Test(
        "a connection closed under an operation past its limit is not leased to the next one while it closes",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func closedConnectionNotLeased() async throws {
        try await ProxiedPostgresStore.with(configure: { configuration in
            // One connection: the next operation gets the one just closed, unless the pool dropped it.
            configuration.client.options.maximumConnections = 1
            configuration.operationTimeout = .milliseconds(500)
            // The read past its limit finds the database away: the next one's wait for a new connection (slow on a
            // loaded machine) keeps its usual bound.
            configuration.awayTimeout = .seconds(10)
            configuration.probeInterval = nil
            configuration.watchesSilentConnections = false
        }) { store, proxy in
            let token = StoreConformance.token(4)
            // A loaded machine may take longer than the short limit: what counts is how the next operation fails.
            func readOutlivingLoad() async throws -> DeviceRegistration? {
                for _ in 0..<9 {
                    do { return try await store.device(token) } catch let error as StoreError where error.code == .timedOut {}
                }
                return try await store.device(token)
            }
            for attempt in 0..<10 {
                do {
                    _ = try await store.upsert(TokenRegistration(token: token, topic: "com.example.app", environment: .production))
                    break
                } catch let error as StoreError where error.code == .timedOut && attempt < 9 {}
            }
            var rounds = 0
            for _ in 0..<10 {
                _ = try await readOutlivingLoad()
                // The pool's connection goes silent: the next read runs past its limit and Herald closes it.
                proxy.setMode(.silent)
                proxy.setMode(.pass)
                do {
                    _ = try await store.device(token)
                    // On a loaded machine the last read can finish as its limit runs out, and its connection is
                    // closed all the same: the pool then holds no silent connection and this round checks nothing.
                    continue
                } catch let error as StoreError where error.code == .timedOut {}
                // Leased while it closed, it would fail `unavailable` ("closed this connection", or
                // clientClosedConnection).
                #expect(try await readOutlivingLoad()?.token == token)
                rounds += 1
            }
            #expect(rounds > 0, "no round found the pool's connection silent")
        }
    }

    /// Limits past the suite's own: only the pulse can end a wait in time.
    private static func pastTheSuitesLimits(_ configuration: inout PostgresStore.Configuration) {
        configuration.operationTimeout = .seconds(120)
        configuration.acquireTimeout = .seconds(120)
        configuration.watchesSilentConnections = false
    }
}
