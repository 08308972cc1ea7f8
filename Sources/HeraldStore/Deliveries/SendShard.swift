public import Foundation

/// One shard of a large send: a range of its target, in the order its pages are walked, that any worker of any
/// instance can claim, run and finish on its own (docs/sending.md, "Shards").
///
/// A shard runs from just after ``after`` (the start of the target when `nil`) through ``through`` (inclusive; the end
/// when `nil`), with a lease and a checkpoint of its own, as a whole send has. The send's counts stay on the send:
/// every shard's outcomes add to them.
public struct SendShard: Sendable, Hashable {
    /// Where a shard is in its life.
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// Waiting for a worker.
        case queued
        /// A worker holds its lease.
        case running
        /// Every device of its range has an outcome.
        case done
    }

    /// The send it belongs to.
    public var send: SendID
    /// Its place in the send, from 0.
    public var index: Int
    /// The position its range starts after; `nil`: the start of the target.
    public var after: DeviceCursor?
    /// The last position of its range; `nil`: the end of the target.
    public var through: DeviceCursor?
    public var status: Status
    /// The worker holding its lease, while running.
    public var worker: String?
    /// Until when the worker's lease holds.
    public var leaseUntil: Date?
    /// The last position whose outcome is recorded, with every one before it: a resumed run starts after it.
    public var checkpoint: DeviceCursor?
    /// How many devices its range held when the send was cut.
    public var size: Int
    /// Outcomes its runs recorded (a device sent again after a takeover counts again; the send's counts do not).
    public var recorded: Int

    public init(
        send: SendID, index: Int, after: DeviceCursor?, through: DeviceCursor?, status: Status, worker: String?,
        leaseUntil: Date?, checkpoint: DeviceCursor?, size: Int, recorded: Int
    ) {
        self.send = send
        self.index = index
        self.after = after
        self.through = through
        self.status = status
        self.worker = worker
        self.leaseUntil = leaseUntil
        self.checkpoint = checkpoint
        self.size = size
        self.recorded = recorded
    }

    /// Where a run of the shard starts: after its checkpoint, else after its start.
    public var resumesAfter: DeviceCursor? { checkpoint ?? after }
}

extension SendShard {
    /// Rebuilds a shard from its stored columns (``StoreSQL/shardColumns``).
    package init(stored row: some StoredRow) throws {
        func cursor(_ index: Int) throws -> DeviceCursor? {
            guard let text = try row.optionalText(index) else { return nil }
            guard let cursor = DeviceCursor(text) else {
                throw StoreError(.corruptRecord, "A stored shard has an unreadable position: repair or delete the row.")
            }
            return cursor
        }
        guard let send = SendID(try row.text(0)), let status = Status(rawValue: try row.text(4)) else {
            throw StoreError(.corruptRecord, "A stored shard has an unreadable send id or status: repair the row.")
        }
        self.init(
            send: send, index: Int(try row.integer(1)), after: try cursor(2), through: try cursor(3), status: status,
            worker: try row.optionalText(5), leaseUntil: try row.optionalInteger(6).map(StoreTime.date),
            checkpoint: try cursor(7), size: Int(try row.integer(8)), recorded: Int(try row.integer(9)))
    }
}
