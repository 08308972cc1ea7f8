/// When and how often a notification is sent again.
///
/// Retryable: 429 `TooManyRequests`, 500, 503 (`ServiceUnavailable`, `Shutdown`), timeouts and connection failures,
/// with exponential backoff and full jitter, keeping the same `apns-id`. `ExpiredProviderToken` is retried once
/// right away with a refreshed token. Every other 4xx is final: sending it again cannot succeed.
///
/// Attempts APNs never processed — streams above a GOAWAY's last-stream-id, `REFUSED_STREAM`, requests never written
/// because the connection was closing — are not counted against ``maximumAttempts`` (apns-protocol.md §5.7, §6.3):
/// they are always safe to repeat, and under GOAWAY storms a notification may meet several in a row. They have their
/// own, generous cap, ``maximumUnprocessedResends``, so a connection that refuses everything cannot loop forever.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in total that APNs processed (or may have processed), the first included. Default 5.
    public var maximumAttempts: Int
    /// Re-sends of attempts APNs never processed, on top of ``maximumAttempts``. The first goes out at once on
    /// another stream; the next ones wait the backoff, so a closing connection is not hammered. Default 20.
    public var maximumUnprocessedResends: Int
    /// The backoff ceiling before the second attempt; doubles each time. Default 1 s (Apple's ~1 s start).
    public var initialBackoff: Duration
    /// The largest backoff ceiling. Default 30 s.
    public var maximumBackoff: Duration

    public init(
        maximumAttempts: Int = 5, initialBackoff: Duration = .seconds(1), maximumBackoff: Duration = .seconds(30),
        maximumUnprocessedResends: Int = 20
    ) {
        precondition(maximumAttempts >= 1, "at least one attempt")
        precondition(maximumUnprocessedResends >= 0, "a cap of zero or more unprocessed re-sends")
        self.maximumAttempts = maximumAttempts
        self.maximumUnprocessedResends = maximumUnprocessedResends
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// Never send twice, not even what APNs did not process.
    public static let none = RetryPolicy(maximumAttempts: 1, maximumUnprocessedResends: 0)

    /// The wait before attempt `attempt + 1` after `attempt` failed: uniform in 0…min(maximum, initial·2^(attempt−1))
    /// ("full jitter"), so a burst of failures does not come back as a burst.
    public func backoff(after attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let ceilingSeconds = min(
            Self.seconds(maximumBackoff),
            Self.seconds(initialBackoff) * Double(1 << min(max(attempt - 1, 0), 30)))
        let seconds = Double.random(in: 0...max(ceilingSeconds, 0), using: &random)
        return .nanoseconds(Int64(seconds * 1e9))
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
