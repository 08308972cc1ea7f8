import HTTPTypes
import Synchronization

/// A token bucket per client: `perMinute` requests a minute, with bursts of up to that many.
///
/// Buckets live in memory (per instance). Full buckets are forgotten when the table grows, so a scan of many addresses
/// cannot grow it without bound.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Duration
    }

    private let capacity: Double
    private let perSecond: Double
    private let now: @Sendable () -> Duration
    /// What is limited, in the plural, for the error message: "registrations", "sign-in attempts".
    private let subject: String
    private let buckets = Mutex<[String: Bucket]>([:])
    private static let pruneThreshold = 10_000

    /// - Parameters:
    ///   - perMinute: Requests a minute per client, at least 1.
    ///   - subject: What is limited, in the plural, for the error message.
    ///   - now: A monotonic time; tests pass their own.
    init(
        perMinute: Int, subject: String = "registrations",
        now: @escaping @Sendable () -> Duration = RateLimiter.monotonicNow
    ) {
        self.subject = subject
        capacity = Double(max(1, perMinute))
        perSecond = capacity / 60
        self.now = now
    }

    /// The time since the first call, on the continuous clock.
    static let monotonicNow: @Sendable () -> Duration = {
        let origin = ContinuousClock.now
        return { origin.duration(to: .now) }
    }()

    /// Takes one request from a client's bucket.
    /// - Throws: ``APIError`` `429 rateLimited` with `Retry-After` when the bucket is empty.
    func admit(_ client: String) throws(APIError) {
        let time = now()
        let wait: Double? = buckets.withLock { buckets in
            if buckets.count > Self.pruneThreshold { prune(&buckets, at: time) }
            var bucket = buckets[client] ?? Bucket(tokens: capacity, updated: time)
            bucket.tokens = min(capacity, bucket.tokens + seconds(time - bucket.updated) * perSecond)
            bucket.updated = time
            defer { buckets[client] = bucket }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / perSecond }
            bucket.tokens -= 1
            return nil
        }
        if let wait {
            let retryAfter = max(1, Int(wait.rounded(.up)))
            throw APIError(
                .tooManyRequests, reason: "rateLimited",
                "Too many \(subject) from this address: try again in \(retryAfter) s.",
                headers: [.retryAfter: String(retryAfter)])
        }
    }

    private func prune(_ buckets: inout [String: Bucket], at time: Duration) {
        buckets = buckets.filter { _, bucket in bucket.tokens + seconds(time - bucket.updated) * perSecond < capacity }
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
