import HeraldAPNS
import HeraldCore

/// What the APNs client of one app and environment did lately, as the console's overview shows it.
struct SenderStatistics: Sendable {
    /// The app's bundle id.
    let app: String
    let environment: APNSEnvironment
    /// Connections to APNs open now.
    let openConnections: Int
    /// The latency of its requests over the last 24 hours.
    let latency: LatencyHistogram
}
