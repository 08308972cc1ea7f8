import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var lifecycleCases: [Case] {
        [
            Case("migrations are idempotent, also when two instances run them at once", migrations),
            Case("a closed store refuses calls with an error that says so", closedStore),
        ]
    }

    static func migrations(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1, tags: ["kept"]))
        try await store.migrate()
        try await context.withSecondInstance { other in
            async let first: Void = store.migrate()
            async let second: Void = other.migrate()
            _ = try await (first, second)
            let health = try await other.health()
            #expect(
                health.isMigrated && health.schemaVersion == health.latestSchemaVersion && health.schemaVersion >= 1)
            #expect(try await other.device(token(1))?.tags == ["kept"], "migrating again keeps the data")
        }
        let health = try await store.health()
        #expect(health.isMigrated)
        #expect(!health.description.isEmpty)
    }

    static func closedStore(_ context: Context) async throws {
        let store = context.store
        await store.close()
        await store.close()
        let error = await #expect(throws: StoreError.self) { try await store.device(token(1)) }
        #expect(error?.code == .closed)
        #expect(error?.description.isEmpty == false)
    }
}
