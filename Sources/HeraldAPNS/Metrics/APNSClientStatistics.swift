import Synchronization

/// What one client did lately, readable in-process (the console's overview): the latency of its requests to APNs
/// over the last 24 hours, and how many connections it has open.
///
/// The swift-metrics Timer and counters of ``APNSMetrics`` go to whatever backend the process bootstrapped and cannot
/// be read back; this keeps a bounded copy next to them. A sample costs one uncontended lock and a few arithmetic
/// operations, on the send path of tens of thousands of requests a second.
public final class APNSClientStatistics: Sendable {
    private let window = Mutex(LatencyWindow())
    private let connections = Atomic<Int>(0)
    /// Hours of the window count from here, on the monotonic clock (a wall-clock jump must not empty the window).
    private let origin: ContinuousClock.Instant

    /// - Parameter origin: Where hour 0 starts; tests pick one to move between hours.
    public init(origin: ContinuousClock.Instant = .now) {
        self.origin = origin
    }

    private func hour(of instant: ContinuousClock.Instant) -> Int64 {
        let elapsed = origin.duration(to: instant).components.seconds
        // Floor division, so an instant before the origin falls in hour −1 and not in hour 0.
        return elapsed >= 0 ? elapsed / 3_600 : (elapsed - 3_599) / 3_600
    }

    /// Counts the latency of one answered request.
    func answered(after elapsed: Duration, at instant: ContinuousClock.Instant) {
        let (seconds, attoseconds) = elapsed.components
        let microseconds = max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        let hour = hour(of: instant)
        window.withLock { $0.record(microseconds: UInt64(microseconds), hour: hour) }
    }

    func connectionOpened() { connections.add(1, ordering: .relaxed) }
    func connectionClosed() { connections.subtract(1, ordering: .relaxed) }

    /// The latencies of the last 24 hours (the hour under way and the 23 before it).
    /// - Parameter instant: Now; tests pass a later instant to read another hour.
    public func latency(at instant: ContinuousClock.Instant = .now) -> LatencyHistogram {
        let hour = hour(of: instant)
        return window.withLock { $0.histogram(hour: hour) }
    }

    /// The connections to APNs open now (opened and not yet closed), of every pool of the client.
    public var openConnections: Int { max(0, connections.load(ordering: .relaxed)) }
}
