public import Foundation

/// Signed webhooks (docs/integrations.md): endpoints per app, and the outbox of their events.
///
/// Events are written by the store itself, in the transaction of what they report: outcomes
/// (``DeliveryStore/recordOutcomes(_:for:checkpoint:)`` and the other ways outcomes are recorded), a send's end,
/// receipts and an activity's end. A deliverer claims an endpoint whose events wait
/// (``claimWebhookBatch(worker:leaseUntil:limit:)``), posts them, and records how it went
/// (``recordWebhookAttempt(_:)``); an endpoint is one deliverer's at a time, so its events go in order.
/// Methods throw ``StoreError`` (or `CancellationError`).
public protocol WebhookStore: Sendable {
    /// Records a new endpoint, active.
    /// - Throws: ``StoreError`` `.invalidRecord` when its id is taken.
    func createWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint

    /// Every endpoint (of one app, when given), oldest first.
    func webhookEndpoints(app: String?) async throws -> [WebhookEndpoint]

    /// An endpoint, or `nil`.
    func webhookEndpoint(_ id: UUID) async throws -> WebhookEndpoint?

    /// Changes an endpoint's URL, events or description. - Returns: it as stored now, or `nil` when unknown.
    func updateWebhookEndpoint(_ id: UUID, _ update: WebhookEndpointUpdate) async throws -> WebhookEndpoint?

    /// Pauses an endpoint with a reason (its events wait), or resumes it (its failures are forgotten and it is tried
    /// at once). - Returns: it as stored now, or `nil` when unknown.
    func setWebhookEndpoint(_ id: UUID, paused reason: String?) async throws -> WebhookEndpoint?

    /// Deletes an endpoint with its outbox and deliveries. - Returns: `false` when unknown.
    func deleteWebhookEndpoint(_ id: UUID) async throws -> Bool

    /// Makes `secret` the endpoint's secret; the previous one keeps signing (beside it) until `previousExpiresAt`.
    /// - Returns: it as stored now, or `nil` when unknown.
    func rotateWebhookSecret(of id: UUID, to secret: String, previousExpiresAt: Date) async throws -> WebhookEndpoint?

    /// Writes an event to one endpoint's outbox whatever it subscribes to: the "send a test event" button.
    /// - Returns: `false` when the endpoint is unknown.
    func enqueueWebhookEvent(_ draft: WebhookEventDraft, for id: UUID) async throws -> Bool

    /// Takes the active endpoint whose events have waited longest for a try (its backoff over, no other deliverer's
    /// lease on it), gives its lease to `worker`, and returns its oldest waiting events. PostgreSQL: instances
    /// skip the endpoints another holds (`FOR UPDATE SKIP LOCKED`). - Returns: `nil` when none is due.
    func claimWebhookBatch(worker: String, leaseUntil: Date, limit: Int) async throws -> WebhookBatch?

    /// Records a delivery of a claimed batch and releases the endpoint's lease, in one transaction: the delivery in
    /// the endpoint's history; delivered events marked; failures counted and the next try set; or the endpoint
    /// paused with its waiting events moved to the dead letter.
    /// - Returns: `false` when `worker` no longer held the endpoint (only the events' marks are written).
    @discardableResult
    func recordWebhookAttempt(_ attempt: WebhookAttempt) async throws -> Bool

    /// Records a delivered batch as ``recordWebhookAttempt(_:)`` does and, in the same transaction, keeps the
    /// endpoint for the attempt's worker until `leaseUntil` and returns its next waiting events (at most `limit`):
    /// one write per batch while an endpoint has a backlog, instead of a record and a claim.
    /// - Returns: `nil` when nothing more waits, the endpoint is no longer active, or the worker no longer held it
    ///   (the lease is released then, as by ``recordWebhookAttempt(_:)``).
    func recordWebhookDeliveryAndClaimNext(_ attempt: WebhookAttempt, leaseUntil: Date, limit: Int) async throws
        -> WebhookBatch?

    /// The endpoint's most recent deliveries, newest first.
    func webhookDeliveries(of id: UUID, limit: Int) async throws -> [WebhookDelivery]

    /// Moves the endpoint's dead letter back into its outbox, in their order, and resumes the endpoint.
    /// - Returns: How many events, or `nil` when the endpoint is unknown.
    func replayWebhookDeadLetter(of id: UUID) async throws -> Int?

    /// What waits in each endpoint's outbox; endpoints without events are left out.
    func webhookQueues() async throws -> [UUID: WebhookQueue]

    /// Deletes up to `limit` delivered events delivered before `date`, and deliveries made before it.
    /// - Returns: How many rows went.
    func purgeWebhookHistory(before date: Date, limit: Int) async throws -> Int
}
