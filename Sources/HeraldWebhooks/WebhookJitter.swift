import Synchronization

/// Where the backoff's jitter comes from: random by default, a seeded sequence in tests.
///
/// A delay `d` becomes `d/2 + r·d/2` with `r` in [0, 1): "equal jitter", so endpoints that failed together do not
/// all retry at once, and no retry comes sooner than half its delay.
public final class WebhookJitter: Sendable {
    private let state: Mutex<UInt64>

    /// Random jitter.
    public init() {
        state = Mutex(UInt64.random(in: 1...UInt64.max))
    }

    /// A repeatable sequence: the same seed, the same delays.
    public init(seed: UInt64) {
        state = Mutex(seed)
    }

    /// The next value in [0, 1).
    public func next() -> Double {
        // SplitMix64.
        let value = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Double(value >> 11) / Double(1 << 53)
    }

    /// `delay` with jitter.
    public func apply(to delay: Duration) -> Duration {
        delay / 2 + (delay / 2) * next()
    }
}
