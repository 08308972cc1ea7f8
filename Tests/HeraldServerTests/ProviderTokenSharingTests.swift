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

    @Test("a key that only shares the id (the in-process emulator's new key after a restart) signs its own token",
          arguments: Backend.available)
    func sameKeyIDOtherKey(backend: Backend) async throws {
        let database = try TestDatabase.make(backend)
        let store = try StoreFactory.open(url: database.url)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            try await store.migrate()
            let before = ProviderTokenCache(key: TestSigningKeys.make(keyID: "EMULATOR01", teamID: "HERALDTEAM"))
            let afterRestart = ProviderTokenCache(key: TestSigningKeys.make(keyID: "EMULATOR01", teamID: "HERALDTEAM"))
            for cache in [before, afterRestart] {
                await ProviderTokenSharing(
                    store: store, caches: [cache], interval: .seconds(60), clock: ContinuousClock(), storeReady: Gate(),
                    logger: Logger(label: "test")
                ).synchronize()
            }
            #expect(afterRestart.signatureCount == 1, "the other key's stored token was not adopted")
            let verifier = ProviderTokenVerifier(trustedKeys: [.init(afterRestart.key)])
            #expect(throws: Never.self) { try verifier.verify(jwt: afterRestart.currentToken().jwt, now: Date()) }
            await store.close()
            group.cancelAll()
        }
        await database.cleanup()
    }
}
