import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import Testing

/// A pooled connection whose path went silent for good (a NAT that lost its state): the operation that gets it fails
/// within seconds, saying so, rather than at its 2-minute limit; the next one, on a new connection, works.
@Suite("PostgreSQL store: a connection gone silent", .timeLimit(.minutes(1)))
struct PostgresSilentConnectionTests {
    @Test(
        "an operation on a connection gone silent fails within seconds, not at its limit; the database answers meanwhile",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func silentConnectionNoticed() async throws {
        let (fixture, url, _) = try PostgresStoreTests.caseDatabase()
        let direct = try #require(URLComponents(string: url))
        let proxy = try await TCPFaultProxy.start(
            upstreamHost: direct.host ?? "127.0.0.1", upstreamPort: direct.port ?? 5432)
        try await withCleanup({
            await proxy.shutdown()
            await fixture.cleanup()
        }) {
            var proxied = direct
            proxied.port = proxy.port
            var configuration = try PostgresStore.Configuration(url: proxied.string! + "&pool=1")
            // Longer than the suite's time limit: only the watch can end the wait in time. No probe: it would find the
            // database away first, and this is a dead connection beside a live database.
            configuration.operationTimeout = .seconds(120)
            configuration.probeInterval = nil
            try await StoreConformance.withRunning(PostgresStore(configuration: configuration)) { store in
                let token = StoreConformance.token(1)
                _ = try await store.upsert(TokenRegistration(token: token, topic: "com.example.app", environment: .production))
                // The pool's one connection goes silent; connections made after it work.
                proxy.setMode(.silent)
                proxy.setMode(.pass)
                let error = await #expect(throws: StoreError.self) { try await store.device(token) }
                #expect(error?.code == .timedOut && error?.message.contains("went silent") == true, "\(String(describing: error))")
                #expect(try await store.device(token)?.token == token, "a new connection works")
            }
        }
    }
}
