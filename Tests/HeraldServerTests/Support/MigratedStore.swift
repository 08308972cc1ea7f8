import HeraldStore
import ServiceLifecycle

@testable import HeraldServer

extension TestDatabase {
    /// A migrated store on a fresh database of the backend, running for the duration of `body`; dropped afterwards.
    static func withMigratedStore(_ backend: Backend, _ body: (any Store) async throws -> Void) async throws {
        let database = try TestDatabase.make(backend)
        do {
            let store = try StoreFactory.open(url: database.url)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await store.run() }
                try await store.migrate()
                try await body(store)
                await store.close()
                group.cancelAll()
            }
        } catch {
            await database.cleanup()
            throw error
        }
        await database.cleanup()
    }
}
