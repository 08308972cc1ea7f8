import ArgumentParser
import Foundation
import HeraldServer
import HeraldStore
import ServiceLifecycle

/// `--database-url`, shared by the commands that open the store.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: "The database (instead of HERALD_DATABASE_URL; default sqlite://herald.sqlite).")
    var databaseURL: String?

    /// The URL to use: the option, else HERALD_DATABASE_URL, else the server's default.
    var resolvedURL: String {
        databaseURL ?? ProcessInfo.processInfo.environment["HERALD_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ServerConfiguration().databaseURL
    }

    /// Opens and migrates the store, runs `body` with it, and closes it.
    func withStore<Result: Sendable>(_ body: @Sendable (any Store) async throws -> Result) async throws -> Result {
        try await Self.withStore(url: resolvedURL, body)
    }

    /// Opens and migrates the store at `url`, runs `body` with it, and closes it.
    static func withStore<Result: Sendable>(url: String, _ body: @Sendable (any Store) async throws -> Result)
        async throws -> Result
    {
        let store: any Store
        do {
            store = try StoreFactory.open(url: url)
        } catch let error as StoreError {
            throw ValidationError(error.message)
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            do {
                try await store.migrate()
                let result = try await body(store)
                await store.close()
                return result
            } catch let error as StoreError {
                await store.close()
                throw ValidationError(error.message)
            } catch {
                await store.close()
                throw error
            }
        }
    }
}
