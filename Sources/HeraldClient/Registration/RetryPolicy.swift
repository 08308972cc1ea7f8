/// How often and how patiently a request is retried: exponential backoff with jitter.
///
/// Only failures that may pass are retried: network errors, `429 Too Many Requests` and 5xx. Other 4xx statuses mean
/// the request itself is wrong, and sending it again would get the same answer.
public struct RetryPolicy: Sendable, Hashable {
    /// The most requests made for one operation, the first included. At least 1.
    public var maximumAttempts: Int
    /// The wait after the first failure, before jitter.
    public var initialDelay: Duration
    /// What each further wait is multiplied by.
    public var multiplier: Double
    /// The longest wait, before jitter; also caps a server's `Retry-After`.
    public var maximumDelay: Duration
    /// The share of each wait drawn at random, 0…1: with 0.5 a 4-second wait becomes 2 to 4 seconds, so that many
    /// devices refused at once do not all come back at the same moment.
    public var jitter: Double

    /// - Parameters:
    ///   - maximumAttempts: requests per operation, the first included; values below 1 count as 1.
    ///   - initialDelay: the wait after the first failure.
    ///   - multiplier: the growth of each further wait; values below 1 count as 1.
    ///   - maximumDelay: the longest wait.
    ///   - jitter: the random share of each wait, clamped to 0…1.
    public init(
        maximumAttempts: Int = 4, initialDelay: Duration = .seconds(1), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.multiplier = max(1, multiplier)
        self.maximumDelay = maximumDelay
        self.jitter = min(1, max(0, jitter))
    }

    /// Four attempts, waiting about 1, 2 and 4 seconds between them.
    public static let `default` = RetryPolicy()

    /// One attempt, no retry.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// How long to wait after a failed attempt before the next one.
    /// - Parameters:
    ///   - attempt: the number of the attempt that failed, from 1.
    ///   - randomFraction: a random number in 0..<1 that chooses the jitter.
    ///   - retryAfter: the server's `Retry-After`, which is honoured up to ``maximumDelay``.
    public func delay(afterAttempt attempt: Int, randomFraction: Double, retryAfter: Duration? = nil) -> Duration {
        var backoff = initialDelay
        for _ in 1..<max(1, attempt) {
            backoff = backoff * multiplier
            if backoff >= maximumDelay { break }
        }
        backoff = min(backoff, maximumDelay)
        let fraction = min(max(randomFraction, 0), 1)
        let jittered = backoff * (1 - jitter * fraction)
        guard let retryAfter else { return jittered }
        return max(jittered, min(retryAfter, maximumDelay))
    }

    /// Whether an HTTP status is worth retrying: 429 and 5xx.
    public static func isRetryable(status: Int) -> Bool {
        status == 429 || (500...599).contains(status)
    }
}
