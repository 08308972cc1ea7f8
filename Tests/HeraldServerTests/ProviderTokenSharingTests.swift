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
    /// A migrated store of the backend, running for the duration of `body`.
    private func withMigratedStore(_ backend: Backend, _ body: (any Store) async throws -> Void) async throws {
        try await TestDatabase.withMigratedStore(backend, body)
    }

    /// One round of an instance's sharing service.
    private func synchronize(_ cache: ProviderTokenCache, through store: any Store) async {
        await ProviderTokenSharing(
            store: store, caches: [cache], interval: .seconds(60), clock: ContinuousClock(), storeReady: Gate(),
            logger: Logger(label: "test")
        ).synchronize()
    }

    @Test("a second instance adopts the first one's token instead of signing its own", arguments: Backend.available)
    func secondInstanceAdopts(backend: Backend) async throws {
        try await withMigratedStore(backend) { store in
            let key = TestSigningKeys.make()
            let first = ProviderTokenCache(key: key)
            let second = ProviderTokenCache(key: key)
            await synchronize(first, through: store)
            #expect(first.signatureCount == 1)
            await synchronize(second, through: store)
            #expect(second.signatureCount == 0, "the stored token was adopted, not a new one signed")
            #expect(second.currentToken() == first.currentToken())
            let stored = try await store.latestProviderToken(keyID: key.keyID)
            #expect(stored == first.currentToken())
        }
    }

    @Test("a key that only shares the id (the in-process emulator's new key after a restart) signs its own token",
          arguments: Backend.available)
    func sameKeyIDOtherKey(backend: Backend) async throws {
        try await withMigratedStore(backend) { store in
            let before = ProviderTokenCache(key: TestSigningKeys.make(keyID: "EMULATOR01", teamID: "HERALDTEAM"))
            let afterRestart = ProviderTokenCache(key: TestSigningKeys.make(keyID: "EMULATOR01", teamID: "HERALDTEAM"))
            for cache in [before, afterRestart] { await synchronize(cache, through: store) }
            #expect(afterRestart.signatureCount == 1, "the other key's stored token was not adopted")
            let verifier = ProviderTokenVerifier(trustedKeys: [.init(afterRestart.key)])
            #expect(throws: Never.self) { try verifier.verify(jwt: afterRestart.currentToken().jwt, now: Date()) }
        }
    }
}
