import HeraldCore

/// When, and for how long, a notification is sent again.
///
/// Retryable: 429 `TooManyRequests`, 500, 503 (`ServiceUnavailable`, `Shutdown`), timeouts, connection failures and
/// attempts APNs never processed. They are retried with exponential backoff and full jitter, keeping the same
/// `apns-id`, until ``retryWindow`` has passed since the first attempt, and never past the notification's
/// `apns-expiration`. Time decides, not a count of attempts: attempts cut off with their connection cannot use up the
/// retries of an answer that asked for one. `ExpiredProviderToken` is retried once right away with a refreshed token.
/// Every other 4xx is final: sending it again cannot succeed.
///
/// Attempts APNs never processed — streams above a GOAWAY's last-stream-id, `REFUSED_STREAM`, requests never written
/// because the connection was closing — are always safe to repeat (apns-protocol.md §5.7, §6.3): the first goes out
/// again at once on another stream, the next ones wait a backoff of their own, so a closing connection is not
/// hammered. A notification with `apns-expiration: 0` ("try once, do not store") is sent again only after those, or
/// when no connection could be opened: never after an answer or an attempt APNs may have processed.
///
/// ``maximumAttempts`` is a safety net under the window, generous by default, so that a misconfigured backoff cannot
/// make a notification loop hot for the whole window.
public struct RetryPolicy: Sendable, Hashable {
    /// How long after its first attempt a notification may still be sent again. Default 10 minutes.
    public var retryWindow: Duration
    /// Attempts in all, the first and the re-sends of unprocessed attempts included: a safety net, not the limit that
    /// normally decides. `nil` (the default) is twice as many as the window holds at the average backoff between
    /// attempts once the backoff reaches ``maximumBackoff``, and at least 100: 100 for the default 10 minutes and
    /// 30 s, 480 for an hour. See ``attemptCap``.
    public var maximumAttempts: Int?
    /// The backoff ceiling before the second attempt; doubles each time. Default 1 s (Apple's ~1 s start).
    public var initialBackoff: Duration
    /// The largest backoff ceiling. Default 30 s.
    public var maximumBackoff: Duration

    /// - Parameters: see the properties; each has its default.
    public init(
        maximumAttempts: Int? = nil, initialBackoff: Duration = .seconds(1), maximumBackoff: Duration = .seconds(30),
        retryWindow: Duration = .seconds(600)
    ) {
        precondition((maximumAttempts ?? 1) >= 1, "at least one attempt")
        precondition(retryWindow >= .zero, "a retry window of zero or more")
        self.maximumAttempts = maximumAttempts
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.retryWindow = retryWindow
    }

    /// Never send twice, not even what APNs did not process.
    public static let none = RetryPolicy(maximumAttempts: 1, retryWindow: .zero)

    /// The wait before attempt `attempt + 1` after `attempt` failed: uniform in 0…min(maximum, initial·2^(attempt−1))
    /// ("full jitter"), so a burst of failures does not come back as a burst.
    public func backoff(after attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let ceilingSeconds = min(
            Self.seconds(maximumBackoff),
            Self.seconds(initialBackoff) * Double(1 << min(max(attempt - 1, 0), 30)))
        let seconds = Double.random(in: 0...max(ceilingSeconds, 0), using: &random)
        return .nanoseconds(Int64(seconds * 1e9))
    }

    /// The attempts allowed in all: ``maximumAttempts``, or the default worked out from the window and backoff.
    public var attemptCap: Int {
        if let maximumAttempts { return maximumAttempts }
        // Full jitter waits half the ceiling on average: the window holds window ÷ (maximumBackoff / 2) attempts;
        // the cap is twice that.
        let quarterBackoff = Self.seconds(maximumBackoff) / 4
        guard quarterBackoff > 0 else { return 100 }
        return max(100, Int(min(Self.seconds(retryWindow) / quarterBackoff, 1_000_000)))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension RetryPolicy {
    /// How an attempt that asked for another ended, as far as the policy cares.
    enum Miss: Sendable, Hashable {
        /// APNs never processed it: refused, above a GOAWAY's last-stream-id, or never written.
        case unprocessed
        /// It never left: no connection could be opened.
        case unsent
        /// Cut off without an answer (connection closed, stream reset, timeout): APNs may have processed it.
        case cutOff
        /// APNs answered and asked for a retry (429, 500, 503, `Shutdown`).
        case answered
    }

    /// What follows a missed attempt: another after `delay`, or the end, and why.
    enum Next: Sendable, Hashable {
        case retry(after: Duration)
        case stop(RetryStop)
    }

    /// Decides what follows a missed attempt; a pure function of the notification's progress and the time.
    /// - Parameters:
    ///   - attempts: attempts so far, the missed one included.
    ///   - unprocessed: of those, how many APNs never processed, the missed one included when it is one.
    ///   - elapsed: how long since the first attempt began.
    ///   - expiration: the notification's `apns-expiration`, if it has one.
    ///   - untilExpiration: how long until that expiration (negative once past); read only when it is not 0.
    func next(
        after miss: Miss, attempts: Int, unprocessed: Int, elapsed: Duration, expiration: APNSExpirationValue?,
        untilExpiration: @autoclosure () -> Duration, using random: inout some RandomNumberGenerator
    ) -> Next {
        let cap = attemptCap
        if attempts >= cap { return .stop(.attempts(cap)) }
        var remaining = retryWindow - elapsed
        var stop = RetryStop.window(retryWindow)
        switch expiration {
        case .onceOnly?:
            if miss == .answered || miss == .cutOff { return .stop(.onceOnly) }
        case .at(let seconds)?:
            let left = untilExpiration()
            if left < remaining {
                remaining = left
                stop = .expiration(secondsSince1970: seconds)
            }
        case nil:
            break
        }
        guard remaining > .zero else { return .stop(stop) }
        let delay: Duration
        if miss == .unprocessed {
            // Free to repeat at once on another stream the first time; then a backoff of its own, so a connection
            // refusing everything is not hammered.
            delay = unprocessed <= 1 ? .zero : backoff(after: unprocessed - 1, using: &random)
        } else {
            delay = backoff(after: attempts - unprocessed, using: &random)
        }
        // The last attempt starts at the end of the window (or at the expiration), not after it.
        return .retry(after: min(delay, remaining))
    }
}

/// A notification's `apns-expiration` as the retry policy reads it.
enum APNSExpirationValue: Sendable, Hashable {
    /// `0`: APNs tries once and stores nothing.
    case onceOnly
    /// A UNIX time in seconds.
    case at(Int)

    init?(_ expiration: APNSExpiration?) {
        guard let expiration else { return nil }
        self = expiration.secondsSince1970 == 0 ? .onceOnly : .at(expiration.secondsSince1970)
    }
}

/// Why the retry policy stopped sending a notification whose last attempt asked for another.
enum RetryStop: Sendable, Hashable {
    /// The retry window (the duration) since the first attempt ran out.
    case window(Duration)
    /// The notification's `apns-expiration` came before another attempt could.
    case expiration(secondsSince1970: Int)
    /// `apns-expiration: 0`, and APNs processed (or may have processed) an attempt.
    case onceOnly
    /// The safety cap on attempts (the number) was reached.
    case attempts(Int)
}
