public import Foundation
public import HeraldCore

/// Delivery records: each send, its progress, and the outcome of every notification; and the bookkeeping that lets
/// a background send survive a crash and be shared by several server instances.
///
/// A durable send goes like this: the server calls ``createSend(_:)`` with status `queued` and its serialized job;
/// a worker calls ``claimNextQueuedSend(worker:leaseUntil:)``, walks the targets from the send's
/// ``SendRecord/checkpoint``, records each batch with ``recordOutcomes(_:for:checkpoint:)`` (outcomes, counts and
/// checkpoint in one transaction), renews its lease with ``renewLease(of:worker:until:)``, and finishes with
/// ``updateSend(_:_:)``. If the worker dies, its lease runs out and another worker claims the send and resumes
/// after the checkpoint.
///
/// Methods throw ``StoreError`` (or `CancellationError`).
public protocol DeliveryStore: Sendable {
    /// Records a new send.
    /// - Throws: ``StoreError`` `.invalidRecord` when a send with that id exists.
    func createSend(_ send: NewSend) async throws -> SendRecord

    /// Changes a send's status, target count or message. A cancelled send keeps its status and message: only its
    /// lease is released (with a final or `queued` status), so a worker that finishes after the cancellation cannot
    /// complete it or put it back in the queue.
    /// - Returns: The send as stored now.
    /// - Throws: ``StoreError`` `.notFound` when there is no such send.
    func updateSend(_ id: SendID, _ update: SendUpdate) async throws -> SendRecord

    /// Appends a batch of outcomes to a send, adds them to its counts and moves its checkpoint, in one transaction.
    ///
    /// A send has at most one outcome per device: an outcome for a token the send already has is left out (a
    /// resumed send, or a worker that lost its lease, may send a device again), and not counted. Outcomes are
    /// numbered in the order given, after those already recorded. Write batches, not single outcomes: the cost is
    /// one transaction per call.
    /// - Parameters:
    ///   - checkpoint: The last target the batch covers; `nil` keeps the stored checkpoint.
    /// - Returns: The send's counts after the batch.
    /// - Throws: ``StoreError`` `.notFound` when there is no such send (nothing is written).
    func recordOutcomes(_ outcomes: [DeliveryOutcome], for id: SendID, checkpoint: DeviceCursor?) async throws
        -> OutcomeCounts

    /// Records a send performed while its request waited (an inline send), with its status, every outcome and their
    /// counts, in one transaction: one write for the whole send instead of one to create it, one per batch and one to
    /// finish it.
    /// - Returns: The send as stored.
    /// - Throws: ``StoreError`` `.invalidRecord` when a send with that id exists (nothing is written).
    func recordFinishedSend(_ send: NewSend, outcomes: [DeliveryOutcome]) async throws -> SendRecord

    /// Which of `tokens` already have an outcome in a send: a resumed send skips them.
    func tokensWithOutcomes(of id: SendID, among tokens: [DeviceToken]) async throws -> Set<DeviceToken>

    /// Which of `tokens` a send moved to the other environment (``TokenStore/updateEnvironment(token:to:correctedBy:)``):
    /// the send pushed to them there already, and its walk of that environment skips them.
    func tokensCorrected(by id: SendID, among tokens: [DeviceToken]) async throws -> Set<DeviceToken>

    /// A send, or `nil` when unknown.
    func send(_ id: SendID) async throws -> SendRecord?

    /// One page of a send's outcomes, in the order recorded; a sharded send's on PostgreSQL by shard, each in the
    /// order recorded (its shards record side by side, each numbering its own).
    /// - Parameters:
    ///   - cursor: The previous page's ``OutcomePage/next``, or `nil` for the first page.
    ///   - limit: The most outcomes to return, at least 1.
    func outcomes(of id: SendID, after cursor: OutcomeCursor?, limit: Int) async throws -> OutcomePage

    /// Takes the oldest send of some lanes that is waiting — queued, or running under a lease that ran out — and
    /// gives its lease to a worker.
    ///
    /// Two workers never get the same send while its lease holds: PostgreSQL locks the row
    /// (`FOR UPDATE SKIP LOCKED`, so workers do not wait on each other); SQLite has a single writer.
    /// - Parameters:
    ///   - worker: A name unique to the worker (host and process).
    ///   - leaseUntil: Until when the send is the worker's; renew it well before.
    ///   - lanes: The lanes to claim from (``SendRecord/lane``): those the worker has room in.
    ///   - excluding: Sends the worker is running itself. Their lease may look run out (a wall clock that jumped, a
    ///     run that stalled), but a second run of the same send under the same worker name would pass every check
    ///     that fences the first (``renewLease(of:worker:until:)``, ``rescheduleSend(_:worker:sendAt:sentThrough:)``).
    ///   - precedence: Which apps' sends go first (``AppPriority``); within a priority, the oldest.
    /// - Returns: The claimed send, now `running`, or `nil` when nothing waits in those lanes.
    func claimNextQueuedSend(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>, precedence: ClaimPrecedence
    ) async throws -> SendRecord?

    /// How many sends wait in each lane now (queued and due, or running under a lease that ran out), and since when
    /// the oldest of them waits; lanes without any are left out. For the scheduler's metrics.
    func waitingSends() async throws -> [SendLane: WaitingSends]

    /// Runs `body` while holding, where the store can, the lock on a server instance's id, and releases it after.
    ///
    /// A worker runs inside it for its whole life, so that the next run of the same instance knows this one is dead
    /// once it gets the lock. The store tries to take the lock once before `body` runs; ``InstanceLock/isHeld`` says
    /// whether it did, and ``InstanceLock/acquire()`` tries again.
    ///
    /// PostgreSQL: a session-level advisory lock keyed by the schema and the instance id, on a pooled connection kept
    /// for the duration (the database releases it when the process dies and its connection closes). SQLite: one
    /// server owns the database, so the lock is that of the database file within this process.
    /// - Throws: ``StoreError`` when no connection for the lock can be had (`body` has not run then), or what `body`
    ///   throws.
    func withInstanceLock<T: Sendable>(
        _ instance: String, _ body: @escaping @Sendable (InstanceLock) async throws -> T
    ) async throws -> T

    /// Puts back in the queue the running sends whose worker is known to be dead because this process holds their
    /// instance's lock; called when a worker starts (and when it gets the lock later), so a restarted server resumes
    /// its sends at once instead of waiting for their leases to run out.
    ///
    /// Nothing is put back when the lock is not held. SQLite: one server owns the database, so every running send held
    /// by another worker name was held by an earlier run of this server (killed, or crashed) and is put back.
    /// PostgreSQL: instances share the database and a worker cannot tell a dead peer from a live one, so only the
    /// sends whose worker name starts with the lock's instance id and `/` are put back — an earlier run of this
    /// instance, dead since this process holds its lock; another instance's sends wait for their leases to run out.
    /// - Parameters:
    ///   - lock: The instance lock this process holds.
    ///   - worker: The worker now running, whose sends stay.
    /// - Returns: The sends put back in the queue.
    func requeueAbandonedSends(of lock: InstanceLock, keeping worker: String) async throws -> [SendID]

    /// Cancels a send that is queued or running: it becomes ``SendStatus/cancelled``, is never claimed again, and
    /// says so in its message. A running send stays its worker's (``renewLease(of:worker:until:)`` still answers
    /// `true`), so the worker can record what it has in flight; it must notice the status and stop.
    /// - Returns: The send as stored now — cancelled, or unchanged when it had ended already (completed, failed or
    ///   cancelled) — or `nil` when there is no such send.
    func cancelSend(_ id: SendID) async throws -> SendRecord?

    /// Puts a running send the worker holds back in the queue until `sendAt`, to start again from the beginning of
    /// its target (its checkpoint is cleared; its counts and outcomes stay): the next wave of a send at each device's
    /// local time. `sentThrough` records how far its waves went.
    /// - Returns: `false` when the worker no longer holds the send (cancelled, or claimed by another worker).
    func rescheduleSend(_ id: SendID, worker: String, sendAt: Date, sentThrough: Date) async throws -> Bool

    /// The earliest ``SendRecord/sendAt`` of a queued send after `date`, or `nil`: when a worker must look again.
    func nextSendAt(after date: Date) async throws -> Date?

    /// Extends a worker's lease on a running send (or one cancelled while it ran).
    /// - Returns: `false` when the worker no longer holds the send (its lease ran out and another worker claimed
    ///   it, or the send ended): the worker must stop working on it.
    func renewLease(of id: SendID, worker: String, until: Date) async throws -> Bool

    // MARK: Shards (docs/sending.md, "Shards")

    /// Cuts a running send the worker holds into shards and lets go of it, in one transaction: from then on only its
    /// shards are claimed (``claimShard(worker:leaseUntil:lanes:excluding:precedence:)``), by any worker of any instance.
    /// - Parameters:
    ///   - boundaries: Where shards end (``TokenStore/shardBoundaries(matching:size:limit:)``): shard `i` runs
    ///     after boundary `i − 1` through boundary `i`; the last shard, after the last boundary to the end.
    ///   - size: The devices per shard; the last one holds what is left of `targetCount`.
    /// - Returns: `false` when the worker no longer holds the send (nothing is written).
    func shardSend(_ id: SendID, worker: String, boundaries: [DeviceCursor], size: Int, targetCount: Int)
        async throws -> Bool

    /// Takes the first waiting shard — queued, or running under a lease that ran out — of the running sharded sends of
    /// some lanes, by their app's priority then oldest first, and gives its lease to a worker. Shards of a cancelled
    /// or finished send are never claimed.
    /// - Parameters:
    ///   - excluding: Sends the worker takes no more shards of (it runs as many of them as it wants).
    ///   - precedence: Which apps' sends go first (``AppPriority``).
    /// - Returns: The send and its claimed shard, now `running`; `nil` when none waits.
    func claimShard(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>, precedence: ClaimPrecedence
    ) async throws -> (send: SendRecord, shard: SendShard)?

    /// A send's shards, in order; empty when it runs whole.
    func shards(of id: SendID) async throws -> [SendShard]

    /// Extends a worker's lease on a shard.
    /// - Returns: `false` when the worker no longer holds it (its lease ran out and another worker took it).
    func renewShardLease(of id: SendID, shard: Int, worker: String, until: Date) async throws -> Bool

    /// Ends a worker's run of a shard. `done`: and when every shard of the send is done, completes the send (in the
    /// same transaction) and returns it. `queued`: puts the shard back (a shutdown, a cancelled send).
    /// - Returns: The send when this run completed it; `nil` otherwise, or when the worker no longer held the shard.
    func endShardRun(of id: SendID, shard: Int, worker: String, status: SendShard.Status) async throws -> SendRecord?

    /// ``recordOutcomes(_:for:checkpoint:)`` for a shard's run: the outcomes and the send's counts as there, and the
    /// checkpoint is the shard's (the send's stays). On PostgreSQL the batch waits for no other shard of the send: it
    /// locks the shard's row alone and counts on it until the run ends (``endShardRun(of:shard:worker:status:)``
    /// moves the counts onto the send); reads of the send add what its shards hold.
    func recordOutcomes(_ outcomes: [DeliveryOutcome], for id: SendID, shard: Int, checkpoint: DeviceCursor?)
        async throws -> OutcomeCounts

    /// Calls `wake` each time another instance on the same database may have made work for this one's worker — a
    /// send queued, a send cut into shards, a shard put back — until the task is cancelled, so that an idle worker
    /// starts on it at once instead of at its next poll. Returns at once when no other instance can share the
    /// database (SQLite: one process, whose worker is woken directly).
    ///
    /// PostgreSQL: `LISTEN` on a pooled connection kept for the duration; the writes above `NOTIFY` at their commit.
    /// - Throws: ``StoreError`` when the connection cannot be had or is lost: the caller may watch again later.
    func watchForWork(_ wake: @escaping @Sendable () -> Void) async throws
}

extension DeliveryStore {
    /// One process, nothing to hear from: returns at once.
    public func watchForWork(_ wake: @escaping @Sendable () -> Void) async throws {}

    /// Takes the oldest waiting send of any lane: ``claimNextQueuedSend(worker:leaseUntil:lanes:excluding:precedence:)`` with every lane a
    /// send can wait in.
    public func claimNextQueuedSend(worker: String, leaseUntil: Date) async throws -> SendRecord? {
        try await claimNextQueuedSend(worker: worker, leaseUntil: leaseUntil, lanes: Set(SendLane.priorityOrder))
    }

    /// ``claimNextQueuedSend(worker:leaseUntil:lanes:excluding:precedence:)``, oldest first whatever the app,
    /// leaving out none.
    public func claimNextQueuedSend(worker: String, leaseUntil: Date, lanes: Set<SendLane>) async throws
        -> SendRecord?
    {
        try await claimNextQueuedSend(worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: [], precedence: .none)
    }

    /// ``claimShard(worker:leaseUntil:lanes:excluding:precedence:)``, oldest send first whatever the app.
    public func claimShard(worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>)
        async throws -> (send: SendRecord, shard: SendShard)?
    {
        try await claimShard(worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: excluding, precedence: .none)
    }
}
