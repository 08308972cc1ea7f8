import Foundation
import HeraldWebhooks
import Prometheus
import Synchronization

/// The deliverer's per-endpoint series on the server's registry: `herald_webhook_deliveries_total{endpoint,result}`,
/// `herald_webhook_events_delivered_total{endpoint}`, `herald_webhook_delivery_duration_seconds{endpoint}` (a
/// histogram), and the gauges `herald_webhook_queue_depth{endpoint}`, `herald_webhook_queue_oldest_age_seconds{endpoint}`
/// and `herald_webhook_dead_letter{endpoint}`.
final class WebhookServerMetrics: WebhookMetrics {
    private let registry: PrometheusCollectorRegistry
    /// Endpoints whose gauges were set: set to 0 once their queue empties.
    private let reported = Mutex<Set<UUID>>([])

    static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func webhookDelivery(endpoint: UUID, delivered: Bool, events: Int, latency: Duration) {
        let label = ("endpoint", endpoint.uuidString.lowercased())
        counter("webhook_deliveries", "Webhook batches posted, by endpoint and result (delivered: a 2xx answer).", [
            label, ("result", delivered ? "delivered" : "failed"),
        ]).increment()
        if delivered {
            counter("webhook_events_delivered", "Webhook events delivered, by endpoint.", [label]).increment(
                by: Int64(events))
        }
        registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "herald", metricName: "webhook_delivery_duration", unitName: "seconds",
                helpText: "How long webhook receivers took to answer, by endpoint."),
            labels: [label], buckets: Self.latencyBuckets.map { .milliseconds(Int64($0 * 1000)) }
        ).record(latency)
    }

    func webhookQueues(_ queues: [UUID: (pending: Int, oldestAge: Duration?, dead: Int)]) {
        let previously = reported.withLock { reported in
            defer { reported = Set(queues.keys) }
            return reported
        }
        for id in previously.union(queues.keys) {
            let queue = queues[id] ?? (0, nil, 0)
            let label = [("endpoint", id.uuidString.lowercased())]
            gauge("webhook_queue_depth", "Webhook events waiting for delivery, by endpoint.", label).set(
                Double(queue.pending))
            gauge(
                "webhook_queue_oldest_age_seconds", "Age of the oldest webhook event waiting, by endpoint.", label
            ).set(queue.oldestAge.map { Double($0.components.seconds) } ?? 0)
            gauge("webhook_dead_letter", "Webhook events in the dead letter, by endpoint.", label).set(Double(queue.dead))
        }
    }

    private func counter(_ name: String, _ help: String, _ labels: [(String, String)]) -> Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(namespace: "herald", metricName: name, unitName: "total", helpText: help),
            labels: labels)
    }

    private func gauge(_ name: String, _ help: String, _ labels: [(String, String)]) -> Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "herald", metricName: name, unitName: "", helpText: help),
            labels: labels)
    }
}
