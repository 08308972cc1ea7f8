public import HeraldStore

/// Registers many devices for a test through the store's own upsert, with up to `concurrency` upserts in flight, so
/// that the store's group commit writes them in batches: 20,000 devices cost some hundred commits instead of 20,000
/// (with SQLite's `synchronous = FULL`, one fsync each took 90 s of a 120 s test on a loaded machine).
public enum DeviceSeeding {
    /// Upserts every registration; returns when all are stored, or throws the first failure.
    public static func register(
        _ registrations: some Sequence<TokenRegistration>, in store: any TokenStore, concurrency: Int = 64
    ) async throws {
        precondition(concurrency >= 1, "concurrency must be at least 1")
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for registration in registrations {
                if inFlight == concurrency {
                    try await group.next()
                    inFlight -= 1
                }
                group.addTask { _ = try await store.upsert(registration) }
                inFlight += 1
            }
            try await group.waitForAll()
        }
    }
}
