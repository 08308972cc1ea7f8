import Foundation
import HeraldCore
import Synchronization

/// How far one request's retry policy has come. Device pushes and channel requests keep the same bookkeeping and
/// are judged by the same ``APNSClient/judgeAttempt(_:_:expiration:)``.
struct RetryProgress: Sendable {
    /// The provider token the request carries now.
    var providerToken: ProviderToken?
    /// Whether it was already re-sent once with a fresh provider token after `ExpiredProviderToken`.
    var refreshedProviderToken = false
    /// Every attempt, those APNs never processed included.
    var attempts = 0
    /// Attempts APNs never processed.
    var unprocessed = 0
    /// When the first attempt began, on the client's clock (``APNSClient/clockTime``): the retry window's start.
    var startedAt = Duration.zero
    /// The attempts that asked for another, by kind.
    var log = AttemptLog()
    /// The connection the current attempt went out on (the client's number for it).
    var connection: Int?
    /// Every attempt so far, once there is a second one (the delivery trace); empty while the first may decide.
    var trail: [APNSAttempt] = []

    /// Counts an attempt about to begin; the first one starts the retry window at `now`.
    mutating func begin(at now: @autoclosure () -> Duration) {
        attempts += 1
        connection = nil
        if attempts == 1 { startedAt = now() }
    }

    /// Adds the current attempt to ``trail`` when it is not the only one: it asked for another (`retryAfter`), or
    /// an earlier one did.
    mutating func trace(_ result: Result<APNSResponse, APNSClientError>, retryAfter: Duration?, at now: () -> Date) {
        guard retryAfter != nil || attempts > 1 else { return }
        let attempt: APNSAttempt
        switch result {
        case .success(let response):
            attempt = APNSAttempt(
                number: attempts, at: now(), connection: connection, status: response.status,
                reason: response.status == 200 ? nil : APNSClient.reason(in: response), error: nil,
                uniqueID: response.uniqueID, retryAfter: retryAfter)
        case .failure(let error):
            attempt = APNSAttempt(
                number: attempts, at: now(), connection: connection, status: nil, reason: nil, error: error,
                uniqueID: nil, retryAfter: retryAfter)
        }
        trail.append(attempt)
    }
}

/// What the retry policy makes of one attempt's result.
enum RetryJudgement {
    /// The result stands: accepted, or rejected or failed for good.
    case final
    /// The attempt asked for another, but the policy stops here; the request fails, saying why.
    case gaveUp(RetryStop)
    /// Send again after `delay` (zero: at once); with `refreshed` as the provider token when it is set.
    case retry(after: Duration, refreshed: ProviderToken?)
}

extension APNSClient {
    /// The retry policy (``RetryPolicy``) applied to one attempt's result; counts the outcome in the metrics.
    /// - Parameter expiration: the request's `apns-expiration`: no retry goes past it, and `0` allows none after an
    ///   attempt APNs processed or may have processed.
    func judgeAttempt(
        _ result: Result<APNSResponse, APNSClientError>, _ progress: inout RetryProgress, expiration: APNSExpiration?
    ) -> RetryJudgement {
        let miss: RetryPolicy.Miss
        switch result {
        case .success(let response) where response.status == 200 || response.status == 201 || response.status == 204:
            metrics.accept()
            return .final
        case .success(let response):
            let stated = Self.reason(in: response)
            let reason = stated ?? APNSReason(rawValue: "HTTP\(response.status)")
            metrics.reject(reason: reason.rawValue)
            // A 429 or 5xx without a reason (a push service's, a proxy's) is as transient as APNs's with one.
            let transient = stated == nil && (response.status == 429 || response.status >= 500)
            switch transient ? .withBackoff : reason.retry {
            case .afterRefreshingProviderToken:
                // Not a delivery attempt but a credential to renew: once, at once, whatever the window.
                guard !progress.refreshedProviderToken, progress.attempts < configuration.retry.attemptCap,
                    let tokens = configuration.credentials.tokenCache, let used = progress.providerToken
                else { return .final }
                let fresh = tokens.refreshedToken(replacing: used)
                progress.providerToken = fresh
                progress.refreshedProviderToken = true
                metrics.refreshedJWT()
                return .retry(after: .zero, refreshed: fresh)
            case .withBackoff, .onAnotherConnection:
                progress.log.record(.answered(status: response.status, reason: reason))
                miss = .answered
            default:
                return .final
            }
        case .failure(let error) where error.code == .cancelled:
            // No failure: the outcome is unknown.
            return .final
        case .failure(let error):
            guard error.isRetryable else {
                metrics.fail()
                return .final
            }
            progress.log.record(.failed(error.code))
            if error.code == .notProcessed {
                progress.unprocessed += 1
                miss = .unprocessed
            } else {
                miss = error.code == .connectFailed ? .unsent : .cutOff
            }
        }
        let next = random.withLock { random in
            configuration.retry.next(
                after: miss, attempts: progress.attempts, unprocessed: progress.unprocessed,
                elapsed: clockTime() - progress.startedAt, expiration: APNSExpirationValue(expiration),
                untilExpiration: Self.duration(until: expiration, from: wallClock.now()), using: &random)
        }
        switch next {
        case .retry(let delay):
            return .retry(after: delay, refreshed: nil)
        case .stop(let stop):
            metrics.fail()
            return .gaveUp(stop)
        }
    }

    /// How long from `now` until an expiration (negative once it has passed).
    private static func duration(until expiration: APNSExpiration?, from now: Date) -> Duration {
        guard let expiration else { return .zero }
        return .milliseconds(
            Int64(((Double(expiration.secondsSince1970) - now.timeIntervalSince1970) * 1000).rounded(.down)))
    }

    /// What a request whose retry policy stopped went through: "Gave up after 9 attempts over 10 min 0 s, the retry
    /// window (…): 429 TooManyRequests ×4, …". Bounded: counts per kind, never a list of attempts.
    func gaveUpSummary(_ stop: RetryStop, _ progress: RetryProgress) -> String {
        let attempts = "\(progress.attempts) attempt\(progress.attempts == 1 ? "" : "s")"
        let over = (clockTime() - progress.startedAt).spoken
        let head: String
        switch stop {
        case .window(let window):
            head =
                "Gave up after \(attempts) over \(over), the retry window of \(window.spoken) (retryWindow, HERALD_RETRY_WINDOW on the server)"
        case .expiration(let seconds):
            let date = Date(timeIntervalSince1970: Double(seconds)).formatted(.iso8601)
            head =
                "Gave up after \(attempts) over \(over): its apns-expiration (\(date)) came before another attempt could"
        case .onceOnly:
            head =
                "Not sent again after \(attempts): apns-expiration 0 asks APNs to try once, and APNs processed (or may have processed) the last attempt"
        case .attempts(let cap):
            head =
                "Gave up after \(attempts) over \(over), the retry policy's cap of \(cap) attempt\(cap == 1 ? "" : "s") (maximumAttempts)"
        }
        return "\(head): \(progress.log.summary)"
    }

    /// What to do about a request whose retry policy stopped, after `stop`, the last attempt having met `last`.
    static func advice(after stop: RetryStop, last: AttemptLog.Kind) -> String {
        var advice: String
        switch last {
        case .answered(_, let reason) where reason == .tooManyRequests:
            advice = "APNs throttles notifications to this device: send it fewer, or this one again later"
        case .answered:
            advice = "APNs was unavailable: send it again later"
        case .failed:
            advice = "Check that APNs, or the proxy on the way, is reachable and answering, then send it again"
        }
        switch stop {
        case .window: advice += ", or give the retry window more time"
        case .expiration:
            advice = "It has expired, so APNs would no longer deliver it: send a new one if it still matters"
        case .onceOnly: advice += "; an apns-expiration in the future lets Herald retry it"
        case .attempts: advice += ", or raise maximumAttempts so that the retry window decides"
        }
        return "What to do: \(advice)."
    }
}
