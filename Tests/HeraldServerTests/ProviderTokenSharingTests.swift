import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// Provider tokens shared by instances through the store.
@Suite("Server: provider token sharing")
struct ProviderTokenSharingTests {
    @Test("a second instance adopts the first one's token instead of signing its own", arguments: Backend.available)
    func secondInstanceAdopts(backend: Backend) async throws {
        let database = try TestDatabase.make(backend)
        let store = try StoreFactory.open(url: database.url)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            try await store.migrate()
            let key = TestSigningKeys.make()
            let first = ProviderTokenCache(key: key)
            let second = ProviderTokenCache(key: key)
            func sharing(_ cache: ProviderTokenCache) -> ProviderTokenSharing {
                ProviderTokenSharing(
                    store: store, caches: [cache], interval: .seconds(60), clock: ContinuousClock(), storeReady: Gate(),
                    logger: Logger(label: "test"))
            }
            await sharing(first).synchronize()
            #expect(first.signatureCount == 1)
            await sharing(second).synchronize()
            #expect(second.signatureCount == 0, "the stored token was adopted, not a new one signed")
            #expect(second.currentToken() == first.currentToken())
            #expect(try await store.latestProviderToken(keyID: key.keyID) == first.currentToken())
            await store.close()
            group.cancelAll()
        }
        await database.cleanup()
    }
}
