import HeraldCore
import HeraldStore
import Prometheus

/// The server's own metrics, written straight into the Prometheus registry `/metrics` serves.
///
/// The sender's metrics (`herald_apns_*`) go through swift-metrics: `herald serve` bootstraps swift-metrics with a
/// factory over the same registry, so they appear on `/metrics` too.
struct ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let registered: Counter
    private let updated: Counter
    private let unregistered: Counter
    private let accepted: Counter
    private let failed: Counter
    private let corrected: Counter

    private enum Name {
        static let registrations = ("registrations", "Token registrations, by whether the token was new.")
        static let unregistrations = ("unregistrations", "Tokens the apps unregistered (DELETE /api/token).")
        static let outcomes = ("send_outcomes", "Notification outcomes, by outcome and APNs reason.")
        static let removals = ("token_removals", "Tokens taken out of sends after APNs rejected them, by reason.")
        static let corrections = ("environment_corrections", "BadDeviceToken tokens the other environment accepted.")
        static let sends = ("sends", "Sends started, inline or in the background.")
        static let receipts = ("receipt_events", "Delivery receipts the apps reported, by what became of them.")
        static let activityPushes = (
            "activity_pushes", "Live Activity starts, updates and ends sent through the API, by event, priority and route (devices or channel)."
        )
    }

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        registered = Self.counter(registry, Name.registrations, [("result", "created")])
        updated = Self.counter(registry, Name.registrations, [("result", "updated")])
        unregistered = Self.counter(registry, Name.unregistrations, [])
        accepted = Self.counter(registry, Name.outcomes, [("outcome", "accepted"), ("reason", "")])
        failed = Self.counter(registry, Name.outcomes, [("outcome", "failed"), ("reason", "")])
        corrected = Self.counter(registry, Name.corrections, [])
    }

    private static func counter(
        _ registry: PrometheusCollectorRegistry, _ name: (String, String), _ labels: [(String, String)]
    ) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "herald", metricName: name.0, unitName: "total", helpText: name.1),
            labels: labels)
    }

    func registration(_ change: UpsertResult.Change) {
        switch change {
        case .created: registered.increment()
        case .updated: updated.increment()
        }
    }

    func unregistration() { unregistered.increment() }

    func outcome(_ result: DeliveryOutcome.Result) {
        switch result {
        case .accepted: accepted.increment()
        case .failed: failed.increment()
        case .rejected(_, let reason, _):
            Self.counter(registry, Name.outcomes, [("outcome", "rejected"), ("reason", reason.rawValue)]).increment()
        }
    }

    /// A token taken out of sends, per APNs reason (`Unregistered`, `ExpiredToken`, `BadDeviceToken`).
    func removal(_ reason: APNSReason) {
        Self.counter(registry, Name.removals, [("reason", reason.rawValue)]).increment()
    }

    func environmentCorrected() { corrected.increment() }

    /// A batch of delivery receipts: recorded, duplicates of earlier ones, ignored (no such delivery).
    func receipts(recorded: Int, duplicates: Int, ignored: Int) {
        for (result, count) in [("recorded", recorded), ("duplicate", duplicates), ("ignored", ignored)] where count > 0 {
            Self.counter(registry, Name.receipts, [("result", result)]).increment(by: Int64(count))
        }
    }

    /// How a Live Activity push reached its devices: one request per device token, or one broadcast on a channel.
    enum ActivityRoute: String {
        case devices
        case channel
    }

    func activityPush(event: String, priority: Int, via route: ActivityRoute) {
        Self.counter(
            registry, Name.activityPushes, [("event", event), ("priority", "\(priority)"), ("via", route.rawValue)]
        ).increment()
    }

    func sendStarted(background: Bool) {
        Self.counter(registry, Name.sends, [("mode", background ? "background" : "inline")]).increment()
    }
}
