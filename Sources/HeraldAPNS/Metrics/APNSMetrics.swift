import CoreMetrics

/// The sender's metrics through swift-metrics; whatever backend the process bootstraps (Prometheus in
/// `herald serve`) receives them. Labels start with `herald_apns_`.
struct APNSMetrics: Sendable {
    private let sent = Counter(label: "herald_apns_sent_total")
    private let accepted = Counter(label: "herald_apns_accepted_total")
    private let retries = Counter(label: "herald_apns_retries_total")
    private let failures = Counter(label: "herald_apns_failed_total")
    private let latency = Timer(label: "herald_apns_latency_seconds")
    private let inFlight = Meter(label: "herald_apns_in_flight_streams")
    private let opened = Counter(label: "herald_apns_connections_opened_total")
    private let closed = Counter(label: "herald_apns_connections_closed_total")
    private let jwtRefreshes = Counter(label: "herald_apns_jwt_refreshes_total")
    /// The in-process copy of latency and open connections that the console reads.
    let statistics = APNSClientStatistics()

    func attempt() {
        sent.increment()
        inFlight.increment()
    }

    func answered(after elapsed: Duration, at instant: ContinuousClock.Instant) {
        inFlight.decrement()
        let (seconds, attoseconds) = elapsed.components
        latency.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        statistics.answered(after: elapsed, at: instant)
    }

    func accept() { accepted.increment() }
    func reject(reason: String) { Counter(label: "herald_apns_rejected_total", dimensions: [("reason", reason)]).increment() }
    func retry() { retries.increment() }
    func fail() { failures.increment() }
    func connectionOpened() {
        opened.increment()
        statistics.connectionOpened()
    }

    func connectionClosed() {
        closed.increment()
        statistics.connectionClosed()
    }
    func goAway(reason: String?) { Counter(label: "herald_apns_goaways_total", dimensions: [("reason", reason ?? "none")]).increment() }
    func refreshedJWT() { jwtRefreshes.increment() }
}
