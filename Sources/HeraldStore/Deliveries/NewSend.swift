public import Foundation

/// What ``DeliveryStore/createSend(_:)`` needs to record a send.
public struct NewSend: Sendable, Hashable {
    /// The id to record it under; a new one by default.
    public var id: SendID
    /// The target in words, safe to show: "topic com.example.app (production)", "user 42", "3 tokens".
    public var target: String
    /// The notification in words, safe to show: push type, title, no secrets.
    public var summary: String
    /// What a worker needs to perform the send after a restart, serialized by the server (JSON). The store keeps
    /// it as it is.
    public var job: String?
    /// `queued` for a background send a worker will claim, `running` for one the caller performs itself.
    public var status: SendStatus
    /// How many targets the send has, when known.
    public var targetCount: Int?
    /// When a queued send may start; `nil`: at once.
    public var sendAt: Date?
    /// Counts of notifications that have no device outcome: a broadcast is one request for every subscriber of a
    /// channel. Outcomes recorded later add to them.
    public var counts: OutcomeCounts
    /// A note about how it went: for a broadcast, what APNs answered.
    public var message: String?
    /// The scheduler lane a queued send waits in. ``DeliveryStore/recordFinishedSend(_:outcomes:)`` records every
    /// send as ``SendLane/inline`` whatever this says.
    public var lane: SendLane
    /// The devices of the target left out by a rule about their person (a preference), counted when the send was
    /// accepted.
    public var suppressed: SuppressedCounts
    /// The app (bundle id) the send is for; `nil` when it has none to name. Keys scoped to apps see only theirs.
    public var topic: String?
    /// The audit log's entry for the request that made the send, written with it in the same write: the send and its
    /// entry are stored together or not at all, and an inline send waits for one commit, not two.
    public var audit: AuditEntry?

    public init(
        id: SendID = SendID(), target: String, summary: String, job: String? = nil, status: SendStatus = .queued,
        targetCount: Int? = nil, sendAt: Date? = nil, counts: OutcomeCounts = OutcomeCounts(), message: String? = nil,
        lane: SendLane = .background, suppressed: SuppressedCounts = SuppressedCounts(), topic: String? = nil,
        audit: AuditEntry? = nil
    ) {
        self.audit = audit
        self.suppressed = suppressed
        self.topic = topic
        self.id = id
        self.target = target
        self.summary = summary
        self.job = job
        self.status = status
        self.targetCount = targetCount
        self.sendAt = sendAt
        self.counts = counts
        self.message = message
        self.lane = lane
    }
}

extension NewSend {
    /// The error for a send whose id is taken.
    package static func alreadyExists(_ id: SendID) -> StoreError {
        StoreError(.invalidRecord, "A send with id \(id) exists already: create the send with a new id.")
    }
}
