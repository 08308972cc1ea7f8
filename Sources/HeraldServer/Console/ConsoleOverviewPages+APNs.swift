import Foundation
import HeraldAPNS
import HeraldCore

extension ConsoleOverviewPages {
    /// The overview's APNs figures: p50 and p99 of every client's requests over the last 24 hours, open connections,
    /// and one row per app and environment.
    struct APNSFigures {
        struct Client {
            let app: String
            let environment: String
            let open: Int
            let requests: UInt64
            let p50: String
            let p99: String
        }

        let p50: String
        let p99: String
        let requests: UInt64
        let hasRequests: Bool
        let open: Int
        let clients: [Client]
    }

    func apnsFigures() -> APNSFigures {
        let clients = apnsStatistics()
        var all = LatencyHistogram()
        for client in clients { all.merge(client.latency) }
        return APNSFigures(
            p50: Self.latency(all.percentile(0.5)), p99: Self.latency(all.percentile(0.99)), requests: all.count,
            hasRequests: all.count > 0, open: clients.reduce(0) { $0 + $1.openConnections },
            clients: clients.map { client in
                APNSFigures.Client(
                    app: client.app, environment: client.environment.name, open: client.openConnections,
                    requests: client.latency.count, p50: Self.latency(client.latency.percentile(0.5)),
                    p99: Self.latency(client.latency.percentile(0.99)))
            })
    }

    /// A latency as the overview shows it: `850 µs`, `4.2 ms`, `120 ms`, `1.25 s`; `—` without samples.
    static func latency(_ duration: Duration?) -> String {
        guard let duration else { return "—" }
        let (seconds, attoseconds) = duration.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        switch microseconds {
        case ..<1_000: return "\(microseconds) µs"
        case ..<10_000: return String(format: "%.1f ms", Double(microseconds) / 1_000)
        case ..<1_000_000: return "\(microseconds / 1_000) ms"
        default: return String(format: "%.2f s", Double(microseconds) / 1_000_000)
        }
    }
}
