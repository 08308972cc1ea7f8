/// How webhooks are delivered (docs/integrations.md; the `HERALD_WEBHOOK_*` variables).
public struct WebhookSettings: Sendable, Hashable {
    /// Whether this instance delivers at all. Events are written to the outbox either way.
    public var enabled: Bool
    /// Endpoints delivered to at once by this instance: 4 by default.
    public var concurrency: Int
    /// The most events in one POST: 100 by default.
    public var batchSize: Int
    /// How often an idle deliverer looks for due events: every second by default.
    public var pollInterval: Duration
    /// How long a receiver may take to answer: 10 seconds by default.
    public var timeout: Duration
    /// How long a claimed endpoint stays this instance's: 60 seconds by default. A deliverer killed meanwhile leaves
    /// its batch to the next claim once the lease runs out.
    public var lease: Duration
    /// The first retry's delay: 5 seconds by default; each further failure doubles it, up to ``maximumBackoff``.
    public var initialBackoff: Duration
    /// The longest delay between two tries: an hour by default.
    public var maximumBackoff: Duration
    /// Failures in a row after which an endpoint is paused, provided ``pauseAfter`` has passed since the first of
    /// them: 10 by default.
    public var pauseAfterFailures: Int
    /// How long an endpoint must have been failing before it is paused: an hour by default.
    public var pauseAfter: Duration
    /// How long a rotated-out secret keeps signing beside the new one, by default: 24 hours.
    public var secretOverlap: Duration

    public init(
        enabled: Bool = true, concurrency: Int = 4, batchSize: Int = 100, pollInterval: Duration = .seconds(1),
        timeout: Duration = .seconds(10), lease: Duration = .seconds(60), initialBackoff: Duration = .seconds(5),
        maximumBackoff: Duration = .seconds(3600), pauseAfterFailures: Int = 10, pauseAfter: Duration = .seconds(3600),
        secretOverlap: Duration = .seconds(86_400)
    ) {
        self.enabled = enabled
        self.concurrency = concurrency
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.timeout = timeout
        self.lease = lease
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.pauseAfterFailures = pauseAfterFailures
        self.pauseAfter = pauseAfter
        self.secretOverlap = secretOverlap
    }

    /// The delay before the try after the `failures`-th failure in a row, before jitter: `initialBackoff` doubled
    /// for each failure after the first, at most `maximumBackoff`.
    public func backoff(afterFailures failures: Int) -> Duration {
        var delay = initialBackoff
        for _ in 1..<max(1, failures) {
            delay *= 2
            if delay >= maximumBackoff { return maximumBackoff }
        }
        return min(delay, maximumBackoff)
    }
}
