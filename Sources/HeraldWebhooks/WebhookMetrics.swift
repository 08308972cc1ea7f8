public import Foundation

/// Where the deliverer reports per endpoint: the server exports these as Prometheus series labelled by endpoint id.
public protocol WebhookMetrics: Sendable {
    /// A batch was posted: delivered (2xx) or not, how many events, how long the receiver took.
    func webhookDelivery(endpoint: UUID, delivered: Bool, events: Int, latency: Duration)
    /// What waits in each endpoint's outbox now; endpoints missing from `queues` have nothing waiting.
    func webhookQueues(_ queues: [UUID: (pending: Int, oldestAge: Duration?, dead: Int)])
}

/// Reports nothing.
public struct NoWebhookMetrics: WebhookMetrics {
    public init() {}
    public func webhookDelivery(endpoint: UUID, delivered: Bool, events: Int, latency: Duration) {}
    public func webhookQueues(_ queues: [UUID: (pending: Int, oldestAge: Duration?, dead: Int)]) {}
}
