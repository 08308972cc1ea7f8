public import Foundation
public import HeraldCore

/// An event about to be written to the outbox, in the transaction of what it reports. Its app is given, or is the
/// topic of the device its token belongs to; it goes to every endpoint of that app that subscribes to its type.
public struct WebhookEventDraft: Sendable, Hashable {
    public var type: WebhookEventType
    /// The app; `nil`: the registered topic of ``token`` (an event about a device the registry no longer has is
    /// not written).
    public var app: String?
    public var token: DeviceToken?
    public var sendID: SendID?
    /// The event's `data` object.
    public var data: JSONValue
    public var at: Date

    public init(
        type: WebhookEventType, app: String? = nil, token: DeviceToken? = nil, sendID: SendID? = nil,
        data: JSONValue, at: Date
    ) {
        self.type = type
        self.app = app
        self.token = token
        self.sendID = sendID
        self.data = data
        self.at = at
    }
}

/// An event in an endpoint's outbox.
public struct WebhookEvent: Sendable, Hashable {
    /// Where it is in the outbox: increasing in the order events were written, unique per endpoint.
    public var id: Int64
    public var type: WebhookEventType
    public var app: String
    public var sendID: SendID?
    /// The `data` object, as JSON text.
    public var data: String
    public var createdAt: Date
    /// Deliveries tried so far.
    public var attempts: Int

    /// The event as delivered: `{"createdAt", "data", "id", "topic", "type"}` (keys in that order).
    public var json: JSONValue {
        .object([
            "id": .string(String(id)), "type": .string(type.rawValue), "topic": .string(app),
            "createdAt": .string(RFC3339.string(createdAt)), "data": (try? JSONValue(parsing: data)) ?? .null,
        ])
    }
}

/// What a deliverer claimed: an endpoint under its lease, the secrets to sign with, and the oldest waiting events.
public struct WebhookBatch: Sendable, Hashable {
    public var endpoint: WebhookEndpoint
    /// The current secret first, then the previous one while its rotation overlap lasts.
    public var secrets: [String]
    /// In outbox order; at most the limit asked for.
    public var events: [WebhookEvent]

    public init(endpoint: WebhookEndpoint, secrets: [String], events: [WebhookEvent]) {
        self.endpoint = endpoint
        self.secrets = secrets
        self.events = events
    }
}

/// What became of one delivery of a batch, for ``WebhookStore/recordWebhookAttempt(_:)``.
public struct WebhookAttempt: Sendable, Hashable {
    /// What the endpoint does next.
    public enum Outcome: Sendable, Hashable {
        /// The receiver answered 2xx: the events are delivered; the endpoint's failures start again from zero.
        case delivered
        /// It failed: the events stay, and the endpoint is tried again at this time.
        case retry(at: Date)
        /// It failed once too often: the endpoint is paused with this reason, its waiting events go to the dead
        /// letter.
        case pause(reason: String)
    }

    public var endpointID: UUID
    /// The deliverer holding the endpoint's lease.
    public var worker: String
    public var eventIDs: [Int64]
    public var startedAt: Date
    public var latency: Duration
    /// The receiver's HTTP status, when it answered.
    public var statusCode: Int?
    /// What went wrong, safe to show; `nil` when delivered.
    public var error: String?
    public var outcome: Outcome

    public init(
        endpointID: UUID, worker: String, eventIDs: [Int64], startedAt: Date, latency: Duration, statusCode: Int?,
        error: String?, outcome: Outcome
    ) {
        self.endpointID = endpointID
        self.worker = worker
        self.eventIDs = eventIDs
        self.startedAt = startedAt
        self.latency = latency
        self.statusCode = statusCode
        self.error = error
        self.outcome = outcome
    }
}

/// One delivery of a batch to an endpoint, as kept for its recent history.
public struct WebhookDelivery: Sendable, Hashable {
    public var id: Int64
    public var endpointID: UUID
    public var at: Date
    public var eventCount: Int
    public var statusCode: Int?
    public var error: String?
    public var latency: Duration
    public var delivered: Bool
}

/// What waits in an endpoint's outbox.
public struct WebhookQueue: Sendable, Hashable {
    /// Events not delivered yet.
    public var pending: Int
    /// When the oldest of them was written.
    public var oldestPendingAt: Date?
    /// Events in the dead letter (``WebhookStore/replayWebhookDeadLetter(of:)`` sends them again).
    public var dead: Int

    public init(pending: Int = 0, oldestPendingAt: Date? = nil, dead: Int = 0) {
        self.pending = pending
        self.oldestPendingAt = oldestPendingAt
        self.dead = dead
    }
}
