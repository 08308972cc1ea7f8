import HeraldCore

/// How far one request's retry policy has come. Device pushes and channel requests keep the same bookkeeping and
/// are judged by the same ``APNSClient/judgeAttempt(_:_:)``.
struct RetryProgress: Sendable {
    /// The provider token the request carries now.
    var providerToken: ProviderToken?
    /// Whether it was already re-sent once with a fresh provider token after `ExpiredProviderToken`.
    var refreshedProviderToken = false
    /// Every attempt, those APNs never processed included.
    var attempts = 0
    /// Attempts APNs never processed: they do not count against ``RetryPolicy/maximumAttempts``.
    var unprocessed = 0
    /// Which backoff the next retry waits: the processed attempts so far, or the unprocessed streak.
    var backoffStep = 0
}

/// What the retry policy makes of one attempt's result.
enum RetryJudgement {
    /// The result stands: accepted, rejected for good, or failed with no attempt left.
    case final
    /// Send again, after the backoff if `afterBackoff`; with `refreshed` as the provider token when it is set.
    case retry(afterBackoff: Bool, refreshed: ProviderToken?)
}

extension APNSClient {
    /// The retry policy (``RetryPolicy``) applied to one attempt's result; counts the outcome in the metrics.
    func judgeAttempt(_ result: Result<APNSResponse, APNSClientError>, _ progress: inout RetryProgress) -> RetryJudgement {
        if case .failure(let error) = result, error.code == .notProcessed,
            progress.unprocessed < configuration.retry.maximumUnprocessedResends
        {
            // Safe to repeat, and free: the first re-send goes out at once on another stream, later ones back off.
            // Beyond the cap, it counts like any other attempt.
            progress.unprocessed += 1
            progress.backoffStep = progress.unprocessed - 1
            return .retry(afterBackoff: progress.unprocessed > 1, refreshed: nil)
        }
        progress.backoffStep = progress.attempts - progress.unprocessed
        let retryable = progress.attempts - progress.unprocessed < configuration.retry.maximumAttempts
        switch result {
        case .success(let response) where response.status == 200 || response.status == 201 || response.status == 204:
            metrics.accept()
            return .final
        case .success(let response):
            let reason = Self.reason(in: response) ?? APNSReason(rawValue: "HTTP\(response.status)")
            metrics.reject(reason: reason.rawValue)
            switch reason.retry {
            case .afterRefreshingProviderToken where !progress.refreshedProviderToken && retryable:
                if let tokens = configuration.credentials.tokenCache, let used = progress.providerToken {
                    let fresh = tokens.refreshedToken(replacing: used)
                    progress.providerToken = fresh
                    progress.refreshedProviderToken = true
                    metrics.refreshedJWT()
                    return .retry(afterBackoff: false, refreshed: fresh)
                }
            case .withBackoff where retryable, .onAnotherConnection where retryable:
                return .retry(afterBackoff: true, refreshed: nil)
            default:
                break
            }
            return .final
        case .failure(let error):
            if error.isRetryable, retryable { return .retry(afterBackoff: true, refreshed: nil) }
            metrics.fail()
            return .final
        }
    }
}
