import HeraldCore
import HeraldSending
import HeraldStore
import Logging
import ServiceLifecycle

/// Shares each signing key's provider token (JWT) with the other instances through the store, so a fleet — or a
/// restarted server — reuses one token per key instead of each minting its own.
///
/// At start, and then every `interval`, it adopts the newest stored token of each key (if newer than the cached one)
/// and saves the cache's current token (kept by the store only if newer).
struct ProviderTokenSharing: Service {
    let store: any ProviderTokenStore
    let caches: [ProviderTokenCache]
    let interval: Duration
    let clock: any Clock<Duration>
    let storeReady: Gate
    let logger: Logger

    func run() async throws {
        guard !caches.isEmpty else { return }
        try? await cancelWhenGracefulShutdown {
            await storeReady.wait()
            while !Task.isCancelled {
                await synchronize()
                try await clock.sleep(for: interval)
            }
        }
    }

    func synchronize() async {
        for cache in caches {
            do {
                if let stored = try await store.latestProviderToken(keyID: cache.key.keyID) { cache.adopt(stored) }
                _ = try await store.saveProviderToken(cache.currentToken())
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "Cannot share the provider token through the store", metadata: [LogKey.error: "\(error)"])
            }
        }
    }
}
