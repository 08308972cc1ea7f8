import Foundation
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import PostgresNIO
import Testing

/// A pooled connection whose path went silent for good (a NAT that lost its state): the operation that gets it fails
/// within seconds, saying so, rather than at its 2-minute limit; the next one, on a new connection, works.
@Suite("PostgreSQL store: a connection gone silent", .timeLimit(.minutes(1)))
struct PostgresSilentConnectionTests {
    @Test(
        "an operation on a connection gone silent fails within seconds, not at its limit; the database answers meanwhile",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func silentConnectionNoticed() async throws {
        try await ProxiedPostgresStore.with(configure: { configuration in
            configuration.client.options.maximumConnections = 1
            // Longer than the suite's time limit: only the watch can end the wait in time. No pulse: it would find the
            // database away first, and this is a dead connection beside a live database.
            configuration.operationTimeout = .seconds(120)
            configuration.probeInterval = nil
        }) { store, proxy in
            let token = StoreConformance.token(1)
            _ = try await store.upsert(
                TokenRegistration(token: token, topic: "com.example.app", environment: .production))
            // The pool's one connection goes silent; connections made after it work.
            proxy.setMode(.silent)
            proxy.setMode(.pass)
            let error = await #expect(throws: StoreError.self) { try await store.device(token) }
            #expect(
                error?.code == .timedOut && error?.message.contains("went silent") == true,
                "\(String(describing: error))")
            #expect(try await store.device(token)?.token == token, "a new connection works")
        }
    }
}
