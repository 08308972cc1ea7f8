public import HeraldAPNS

/// How the send engine runs on one instance: pages, the in-flight budget, lanes, shards, leases, retries.
public struct SendingSettings: Sendable {
    /// Devices fetched from the store per page, and outcomes recorded per transaction. Default 1,000.
    public var pageSize: Int
    /// Notifications in flight at once on this instance, shared by every background send it runs (and the most
    /// one send may have). Default 1,000.
    public var maximumInFlight: Int
    /// Background sends running at once per lane (docs/sending.md, "Lanes"). Default 16.
    public var runningSendsPerLane: Int
    /// Sends to more devices than this go to the campaign lane, as do sends to a whole topic and paced sends.
    /// Default 10,000.
    public var campaignThreshold: Int
    /// Sends to more devices than this are cut into shards of this many devices, which any worker of any instance
    /// may run (docs/sending.md, "Shards"); 0 never cuts. Default 10,000.
    public var shardSize: Int
    /// The most shards of one send a worker runs at once; the others are left to other instances, and a lone one takes
    /// them as these end. Default 1: the run then holds the send's whole part of the in-flight budget, and each
    /// recording carries that many more answers (a quarter of the recordings of four runs at once, in the same wall
    /// time, with 46 % less of the database's CPU per notification: docs/benchmarks.md, "One shard run per send").
    public var shardRunsPerSend = 1
    /// HTTP/2 connections per app and environment. Default 4.
    public var connectionsPerClient: Int
    /// The sender's retry policy for 429, 5xx and connection failures: retried until its retry window (default 10
    /// minutes, `HERALD_RETRY_WINDOW`) runs out.
    public var retry: RetryPolicy
    /// How long a background send's lease lasts; it is renewed at a third of that. Default 2 minutes.
    public var leaseDuration: Duration
    /// How often an idle worker looks for queued sends (other instances may queue them). Default 2 seconds.
    public var pollInterval: Duration
    /// How late a scheduled send (or a wave of a `localTime` send) may still go out, when no server ran at its
    /// time: later than that it is skipped and says so. Default 24 hours.
    public var catchUpLimit: Duration
    /// How long a graceful shutdown waits for APNs to answer what the running sends have in flight before it cancels
    /// those requests (their devices get no outcome and are sent again, with the same `apns-id`, when the send
    /// resumes). Default 5 seconds (`HERALD_SEND_SHUTDOWN_GRACE`): APNs answers in milliseconds; a slow or silent APNs does not hold the shutdown.
    public var shutdownGrace: Duration = .seconds(5)

    /// - Parameters: see the properties; each has its default.
    public init(
        pageSize: Int = 1000, maximumInFlight: Int = 1000, connectionsPerClient: Int = 4,
        retry: RetryPolicy = RetryPolicy(), leaseDuration: Duration = .seconds(120),
        pollInterval: Duration = .seconds(2), catchUpLimit: Duration = .seconds(86_400),
        runningSendsPerLane: Int = 16, campaignThreshold: Int = 10_000, shardSize: Int = 10_000
    ) {
        self.shardSize = shardSize
        self.pageSize = pageSize
        self.maximumInFlight = maximumInFlight
        self.runningSendsPerLane = runningSendsPerLane
        self.campaignThreshold = campaignThreshold
        self.connectionsPerClient = connectionsPerClient
        self.retry = retry
        self.leaseDuration = leaseDuration
        self.pollInterval = pollInterval
        self.catchUpLimit = catchUpLimit
    }
}
