public import Foundation

/// One send as stored: what it targets, how far it got, who works on it.
public struct SendRecord: Sendable, Hashable {
    /// Its id.
    public var id: SendID
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// The target in words.
    public var target: String
    /// The notification in words.
    public var summary: String
    /// The server's serialized job, for resuming.
    public var job: String?
    /// Where it is in its life.
    public var status: SendStatus
    /// How many targets it has, when known.
    public var targetCount: Int?
    /// How many outcomes of each kind were recorded.
    public var counts: OutcomeCounts
    /// The last target whose outcome is recorded: a resumed send starts after it.
    public var checkpoint: DeviceCursor?
    /// The worker holding the lease, while running.
    public var worker: String?
    /// Until when the worker's lease holds. After it, another worker may claim the send.
    public var leaseUntil: Date?
    /// Why it failed, or a note about how it ended.
    public var message: String?
    /// When a queued send may start; `nil`: at once. A send at each device's local time moves it to its next wave.
    public var sendAt: Date?
    /// For a send at each device's local time: the instant through which its time zones' devices were sent.
    public var sentThrough: Date?
    /// The scheduler lane it waits or runs in; ``SendLane/inline`` for a send performed while its request waited.
    public var lane: SendLane
    /// How many shards it was cut into (``SendShard``); `nil` while it runs whole.
    public var shardCount: Int?
    /// The devices of the target left out by a rule about their person, counted when it was accepted.
    public var suppressed: SuppressedCounts
    /// The app (bundle id) the send is for; `nil` for sends recorded before sends knew it (schema 20).
    public var topic: String?

    public init(
        id: SendID, createdAt: Date, updatedAt: Date, target: String, summary: String, job: String?,
        status: SendStatus, targetCount: Int?, counts: OutcomeCounts, checkpoint: DeviceCursor?, worker: String?,
        leaseUntil: Date?, message: String?, sendAt: Date? = nil, sentThrough: Date? = nil,
        lane: SendLane = .background, shardCount: Int? = nil, suppressed: SuppressedCounts = SuppressedCounts(),
        topic: String? = nil
    ) {
        self.suppressed = suppressed
        self.topic = topic
        self.id = id
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.target = target
        self.summary = summary
        self.job = job
        self.status = status
        self.targetCount = targetCount
        self.counts = counts
        self.checkpoint = checkpoint
        self.worker = worker
        self.leaseUntil = leaseUntil
        self.message = message
        self.sendAt = sendAt
        self.sentThrough = sentThrough
        self.lane = lane
        self.shardCount = shardCount
    }
}
