import Foundation
import HeraldStore
import HeraldStorePostgres
import HeraldTesting
import Testing

/// A running store on a database of its own, reached through a fault proxy: for the suites that break the path.
enum ProxiedPostgresStore {
    /// Runs `body` with the store and its proxy; `configure` adjusts the store's configuration first (its limits).
    static func with(
        configure: (inout PostgresStore.Configuration) -> Void,
        _ body: (PostgresStore, TCPFaultProxy) async throws -> Void
    ) async throws {
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
            var configuration = try PostgresStore.Configuration(url: proxied.string!)
            configure(&configuration)
            let store = PostgresStore(configuration: configuration)
            try await StoreConformance.withRunning(store) { _ in try await body(store, proxy) }
        }
    }
}
