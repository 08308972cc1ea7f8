import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Prometheus

/// The server's own metrics, written straight into the Prometheus registry `/metrics` serves.
///
/// The sender's metrics (`herald_apns_*`) go through swift-metrics: `herald serve` bootstraps swift-metrics with a
/// factory over the same registry, so they appear on `/metrics` too.
struct ServerMetrics: SendingMetrics {
    let registry: PrometheusCollectorRegistry
    private let registered: Counter
    private let updated: Counter
    private let unregistered: Counter
    private let accepted: Counter
    private let failed: Counter
    private let corrected: Counter
    private let cancelledNotifications: Counter
    private let storeErrors: Counter
    private let waitingForDatabase: Gauge
    private let databaseWaits: Counter

    private enum Name {
        static let registrations = ("registrations", "Token registrations, by whether the token was new.")
        static let unregistrations = ("unregistrations", "Tokens the apps unregistered (DELETE /api/token).")
        static let outcomes = ("send_outcomes", "Notification outcomes, by outcome and APNs reason.")
        static let webPushOutcomes = (
            "web_push_outcomes", "Web Push message outcomes, by outcome and the push service's status and reason."
        )
        static let removals = ("token_removals", "Tokens taken out of sends after APNs rejected them, by reason.")
        static let cancelled = (
            "notifications_cancelled",
            "Notifications whose send was cancelled (DELETE /api/sends/{id}, or a shutdown past HERALD_SEND_SHUTDOWN_GRACE) before APNs answered: no outcome; a resumed send sends them again."
        )
        static let corrections = ("environment_corrections", "BadDeviceToken tokens the other environment accepted.")
        static let sends = ("sends", "Sends started, inline or in the background.")
        static let receipts = ("receipt_events", "Delivery receipts the apps reported, by what became of them.")
        static let running = ("sends_running", "Background sends this instance runs now, by lane.")
        static let waiting = ("sends_waiting", "Sends waiting to be claimed in every instance's queue, by lane.")
        static let waitingAge = (
            "sends_waiting_oldest_age_seconds", "How long the send that waits longest in each lane has waited, in seconds (0: none waits)."
        )
        static let storeErrors = (
            "database_errors", "Operations the database failed: API requests answered 503, and the send worker's claims and looks at the queue."
        )
        static let waitingForDatabase = (
            "operations_waiting_for_database", "Send work paused because the database is away (a restart, a failover, a lost connection): each waits and tries again; its outcomes are held in memory meanwhile."
        )
        static let databaseWaits = (
            "database_waits", "Times send work began waiting for a database that was away (herald_operations_waiting_for_database counts those waiting now)."
        )
        static let claims = (
            "send_claims", "Background sends and shards of sends this instance claimed, by lane, kind and whether the run resumed (after a restart or another worker's lease ran out)."
        )
        static let budgetInUse = ("send_budget_in_use", "Notifications in flight of the instance's shared budget, by lane.")
        static let budgetTotal = ("send_budget_total", "The instance's in-flight budget (HERALD_SEND_CONCURRENCY).")
        static let budgetWaiting = ("send_budget_waiting_sends", "Running sends that want more of the budget than they hold.")
        static let retentionDeleted = ("retention_deleted", "Rows the retention service deleted, by kind.")
        static let retentionLastRun = (
            "retention_last_run_timestamp", "When the retention service last finished a run, in seconds since 1970."
        )
        static let retentionLastRunDuration = ("retention_last_run_duration", "How long the last retention run took.")
        static let suppressed = (
            "notifications_suppressed", "Devices that sends left out because of a rule about their person, by rule (preference, frequencyCap, quietHoursDropped, quietHoursDeferred: sent at the end of the device's quiet hours, activitiesDisabled: a Live Activity push to a device whose person turned the app's Live Activities off)."
        )
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
        cancelledNotifications = Self.counter(registry, Name.cancelled, [])
        // Registered at start, so the rate of a counter that has not moved yet reads 0, not no data.
        storeErrors = Self.counter(registry, Name.storeErrors, [])
        waitingForDatabase = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "herald", metricName: Name.waitingForDatabase.0, unitName: "",
                helpText: Name.waitingForDatabase.1),
            labels: [])
        databaseWaits = Self.counter(registry, Name.databaseWaits, [])
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

    func webPushOutcome(_ result: DeliveryOutcome.Result) {
        switch result {
        case .accepted:
            Self.counter(registry, Name.webPushOutcomes, [("outcome", "accepted"), ("reason", "")]).increment()
        case .failed:
            Self.counter(registry, Name.webPushOutcomes, [("outcome", "failed"), ("reason", "")]).increment()
        case .rejected(let status, let reason, _):
            Self.counter(
                registry, Name.webPushOutcomes, [("outcome", "rejected"), ("reason", "\(status) \(reason.rawValue)")]
            ).increment()
        }
    }

    /// A token taken out of sends, per APNs reason (`Unregistered`, `ExpiredToken`, `BadDeviceToken`).
    func removal(_ reason: APNSReason) {
        Self.counter(registry, Name.removals, [("reason", reason.rawValue)]).increment()
    }

    func environmentCorrected() { corrected.increment() }

    func cancelled() { cancelledNotifications.increment() }

    /// A batch of delivery receipts: recorded, duplicates of earlier ones, ignored (no such delivery).
    func receipts(recorded: Int, duplicates: Int, ignored: Int) {
        for (result, count) in [("recorded", recorded), ("duplicate", duplicates), ("ignored", ignored)] where count > 0 {
            Self.counter(registry, Name.receipts, [("result", result)]).increment(by: Int64(count))
        }
    }

    /// A Live Activity update sent at priority 5 because its activity's hourly budget was spent.
    /// Devices a Live Activity's start was checked on: `started` or `notStarted` (docs/live-activities.md).
    func pushToStartsChecked(app: String, started: Int, notStarted: Int) {
        for (result, count) in [("started", started), ("notStarted", notStarted)] where count > 0 {
            Self.counter(
                registry,
                ("push_to_start_checked", "Push-to-start notifications APNs accepted, by whether the app then registered an update token of the activity (started) or not (notStarted)."),
                [("app", app), ("result", result)]
            ).increment(by: Int64(count))
        }
    }

    /// Push-to-start tokens marked stale: several starts in a row started nothing.
    func pushToStartTokensStale(app: String, count: Int) {
        guard count > 0 else { return }
        Self.counter(
            registry,
            ("push_to_start_tokens_stale", "Push-to-start tokens left out of sends: their starts started nothing several times in a row (HERALD_PUSH_TO_START_STALE_AFTER)."),
            [("app", app)]
        ).increment(by: Int64(count))
    }

    func activityUpdateDowngraded(app: String) {
        Self.counter(
            registry,
            ("live_activity_updates_downgraded", "Live Activity updates sent at priority 5 instead of 10: the activity's hourly budget (HERALD_LIVE_ACTIVITY_BUDGET) was spent."),
            [("app", app)]
        ).increment()
    }

    /// A Live Activity update sent at priority 10 beyond its activity's budget because the caller forced it.
    func activityUpdateForced(app: String) {
        Self.counter(
            registry,
            ("live_activity_updates_forced", "Live Activity updates sent at priority 10 beyond the activity's hourly budget because the request had \"force\": true."),
            [("app", app)]
        ).increment()
    }

    func pushToStartPaced(app: String, granted: Int, waited: Bool) {
        if granted > 0 {
            Self.counter(
                registry,
                ("push_to_start_paced", "Live Activity starts sent to push-to-start tokens through their app's pace (HERALD_PUSH_TO_START_RATE)."),
                [("app", app)]
            ).increment(by: Int64(granted))
        }
        if waited {
            Self.counter(
                registry,
                ("push_to_start_pace_waits", "Times a start waited for the next second because its app's push-to-start pace (HERALD_PUSH_TO_START_RATE) was spent."),
                [("app", app)]
            ).increment()
        }
    }

    func activityPush(event: String, priority: Int, via route: ActivityRoute) {
        Self.counter(
            registry, Name.activityPushes, [("event", event), ("priority", "\(priority)"), ("via", route.rawValue)]
        ).increment()
    }

    private func gauge(_ name: (String, String), _ labels: [(String, String)]) -> Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "herald", metricName: name.0, unitName: "", helpText: name.1),
            labels: labels)
    }

    /// Live broadcast channels per app and environment, against APNs's cap of 10,000 each.
    func liveChannels(app: String, environment: APNSEnvironment, count: Int) {
        gauge(
            ("channels", "Live broadcast channels per app and environment; APNs allows 10,000 per app and environment."),
            [("app", app), ("environment", environment.name)]
        ).set(Double(count))
    }

    /// The background sends running on this instance, per lane (every lane is set, so an emptied lane reads 0).
    func sendsRunning(_ counts: [SendLane: Int]) {
        for lane in SendLane.priorityOrder {
            gauge(Name.running, [("lane", lane.rawValue)]).set(Double(counts[lane] ?? 0))
        }
    }

    /// The sends waiting in the store's queue, per lane, and the age of each lane's oldest.
    func sendsWaiting(_ lanes: [SendLane: WaitingSends], at now: Date) {
        for lane in SendLane.priorityOrder {
            gauge(Name.waiting, [("lane", lane.rawValue)]).set(Double(lanes[lane]?.count ?? 0))
            let age = lanes[lane].map { max(0, now.timeIntervalSince($0.oldest)) } ?? 0
            gauge(Name.waitingAge, [("lane", lane.rawValue)]).set(age)
        }
    }

    /// An operation the database failed.
    func storeFailed() { storeErrors.increment() }

    /// Send work began or ended waiting for the database.
    func storeOutage(ended: Bool) {
        if ended {
            waitingForDatabase.decrement()
        } else {
            waitingForDatabase.increment()
            databaseWaits.increment()
        }
    }

    /// A claim of a whole send or of one shard; `resumed` when it had outcomes or a checkpoint already (a restart, or a
    /// lease that ran out: a take-over).
    func sendClaimed(lane: SendLane, shard: Bool, resumed: Bool) {
        Self.counter(
            registry, Name.claims,
            [("lane", lane.rawValue), ("kind", shard ? "shard" : "send"), ("resumed", resumed ? "true" : "false")]
        ).increment()
    }

    /// The shared in-flight budget, as `/metrics` is scraped.
    func budget(_ snapshot: InFlightBudget.Snapshot) {
        gauge(Name.budgetTotal, []).set(Double(snapshot.total))
        gauge(Name.budgetWaiting, []).set(Double(snapshot.waiting))
        for lane in SendLane.priorityOrder {
            gauge(Name.budgetInUse, [("lane", lane.rawValue)]).set(Double(snapshot.inUseByLane[lane] ?? 0))
        }
    }

    /// An APNs client certificate's `notAfter`, per app and environment it serves (`herald doctor`'s finding).
    func certificateExpiry(_ certificate: CertificateExpiry) {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "herald", metricName: "apns_certificate_expiry_timestamp", unitName: "seconds",
                helpText: "When each app's APNs client certificate expires (notAfter), as Unix time, by app and environment."),
            labels: [("app", certificate.app), ("environment", certificate.environment)]
        ).set(certificate.notAfter.timeIntervalSince1970.rounded(.down))
    }

    /// Rows of a kind a retention batch deleted.
    func retentionDeleted(_ kind: RetentionKind, _ count: Int) {
        Self.counter(registry, Name.retentionDeleted, [("kind", kind.rawValue)]).increment(by: Int64(count))
    }

    /// A retention run that ended: when, and how long it took.
    func retentionRan(at date: Date, duration: Duration) {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "herald", metricName: Name.retentionLastRun.0, unitName: "seconds",
                helpText: Name.retentionLastRun.1)
        ).set(date.timeIntervalSince1970)
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "herald", metricName: Name.retentionLastRunDuration.0, unitName: "seconds",
                helpText: Name.retentionLastRunDuration.1)
        ).set(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    func sendStarted(background: Bool) {
        Self.counter(registry, Name.sends, [("mode", background ? "background" : "inline")]).increment()
    }

    func suppressed(_ counts: SuppressedCounts) {
        for (reason, count) in [
            ("preference", counts.preference), ("frequencyCap", counts.frequencyCap),
            ("quietHoursDropped", counts.quietHoursDropped), ("quietHoursDeferred", counts.quietHoursDeferred),
            ("activitiesDisabled", counts.activitiesDisabled),
        ] where count > 0 {
            Self.counter(registry, Name.suppressed, [("reason", reason)]).increment(by: Int64(count))
        }
    }
}
