import Foundation
package import HeraldCore
package import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import PostgresNIO
import ServiceLifecycle
import Testing

/// The URL of a PostgreSQL database the tests may create schemas in; `.ci/run` always sets it.
package let testDatabaseURL = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"]

/// Which store a test runs on.
package enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// SQLite always; PostgreSQL when `HERALD_TEST_DATABASE_URL` is set.
    package static var available: [Backend] { testDatabaseURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    package var testDescription: String { rawValue }
}

/// An empty database for one test: a temporary SQLite file, or a fresh PostgreSQL schema; dropped afterwards.
package struct TestDatabase: Sendable {
    package let url: String
    package let backend: Backend
    package let cleanup: @Sendable () async -> Void

    package static func make(_ backend: Backend) throws -> TestDatabase {
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-test-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return TestDatabase(
                url: "sqlite://" + directory.appendingPathComponent("herald.sqlite").path, backend: backend
            ) {
                try? FileManager.default.removeItem(at: directory)
            }
        case .postgres:
            let base = try #require(testDatabaseURL)
            let schema =
                "herald_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
            return TestDatabase(url: base + (base.contains("?") ? "&" : "?") + "schema=\(schema)&pool=5", backend: backend) {
                guard let configuration = try? PostgresStore.Configuration(url: base).client else { return }
                let client = PostgresClient(configuration: configuration)
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await client.run() }
                    _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"))
                    group.cancelAll()
                }
            }
        }
    }

    /// Runs `body` with the URL of an empty database of `backend`, and drops the database afterwards.
    package static func with(_ backend: Backend, _ body: (String) async throws -> Void) async throws {
        let database = try make(backend)
        try await withCleanup({ await database.cleanup() }) { try await body(database.url) }
    }

    /// Runs `body` with a migrated store on an empty database of `backend`, running as a server runs it; closes and
    /// drops it afterwards.
    package static func withMigratedStore(
        _ backend: Backend, clock: any WallClock = SystemWallClock(), _ body: (any Store) async throws -> Void
    ) async throws {
        let database = try make(backend)
        try await withCleanup({ await database.cleanup() }) {
            let store: any Store =
                switch backend {
                case .sqlite: try SQLiteStore(url: database.url, clock: clock)
                case .postgres: try PostgresStore(url: database.url, clock: clock)
                }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await store.run() }
                defer { group.cancelAll() }
                do {
                    try await store.migrate()
                    try await body(store)
                } catch {
                    await store.close()
                    throw error
                }
                await store.close()
            }
        }
    }
}
