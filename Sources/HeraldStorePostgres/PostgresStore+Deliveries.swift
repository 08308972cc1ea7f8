import Foundation
public import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func createSend(_ send: NewSend) async throws -> SendRecord {
        let now = clock.now()
        @Sendable func create(_ session: Session) async throws -> SendRecord {
            guard let row = try await session.rows(StoreSQL.insertSend(send, at: now, .postgres)).first else {
                throw NewSend.alreadyExists(send.id)
            }
            if let audit = send.audit { try await session.execute(StoreSQL.insertAudit(audit.clipped(), .postgres)) }
            // A queued send wakes the other instances' idle workers, at the commit.
            if send.status == .queued { try await self.notifyWork(session) }
            return try row.send()
        }
        // In a transaction even alone: only a COMMIT's answer says the send is stored (postgres-nio answers a lone
        // statement before its implicit commit).
        return try await transaction("record a send", create)
    }

    public func updateSend(_ id: SendID, _ update: SendUpdate) async throws -> SendRecord {
        let now = clock.now()
        return try await transaction("update a send") { session in
            guard let row = try await session.rows(StoreSQL.updateSend(id, update, at: now, .postgres)).first else {
                throw SendRecord.notFound(id)
            }
            let send = try row.send()
            if update.status == send.status, let ended = WebhookEventDraft.event(ofEnded: send, at: now) {
                try await session.writeWebhookEvents([ended])
            }
            // A send put back in the queue (its instance stops) is for another instance to take.
            if update.status == .queued, send.status == .queued { try await self.notifyWork(session) }
            return send
        }
    }

    public func recordOutcomes(_ outcomes: [DeliveryOutcome], for id: SendID, checkpoint: DeviceCursor?)
        async throws -> OutcomeCounts
    {
        try await record(outcomes, for: id, shard: nil, checkpoint: checkpoint)
    }

    /// Records a batch of outcomes; the checkpoint is the shard's when one is given, else the send's. A shard's
    /// batch locks the shard's row, not the send's, and counts on it (`StoreSQL.recordShardOutcomes`): the shards of
    /// one send record side by side.
    func record(_ outcomes: [DeliveryOutcome], for id: SendID, shard: Int?, checkpoint: DeviceCursor?) async throws
        -> OutcomeCounts
    {
        let now = clock.now()
        return try await transaction("record delivery outcomes") { session in
            // Locked first, in its own statement: the next one's snapshot then sees the last outcome of any batch
            // committed while this one waited for the lock.
            guard try await session.rows(StoreSQL.lockForRecording(id, shard: shard)).first != nil else {
                throw SendRecord.notFound(id)
            }
            var recording = OutcomeRecording(outcomes, of: id, shard: shard)
            if let read = recording.priorRead(.postgres) { try recording.resolve(try await session.rows(read)) }
            let record =
                if let shard {
                    StoreSQL.recordShardOutcomes(recording, shard: shard, checkpoint: checkpoint, at: now)
                } else {
                    StoreSQL.recordOutcomes(recording, checkpoint: checkpoint, at: now)
                }
            guard let row = try await session.rows(record).first else { throw SendRecord.notFound(id) }
            // Events only for what is recorded now: a batch recorded again must not announce its devices twice.
            try await session.writeWebhookEvents(
                recording.recordedNow.flatMap { WebhookEventDraft.events(of: $0, in: id) })
            try await self.insertAttempts(outcomes, of: id, in: session)
            return try OutcomeCounts(stored: row)
        }
    }

    /// Group commit (``GroupCommit``): inline sends that finish while a batch is being stored go in the next, one
    /// statement for the batch (`StoreSQL.insertFinishedSends`); a lone one is sent at once, prepared.
    public func recordFinishedSend(_ send: NewSend, outcomes: [DeliveryOutcome]) async throws -> SendRecord {
        try ensureOpen()
        let record = try await finishedSends.submit(FinishedSend(send: send, outcomes: outcomes, at: clock.now())).get()
        // After the send's own commit (the group commit's statement has no room for them): a crash in between loses
        // the attempts of a retried notification, never its outcome.
        if outcomes.contains(where: { !$0.attempts.isEmpty }) {
            try await session("record delivery attempts") { session in
                try await self.insertAttempts(outcomes, of: send.id, in: session)
            }
        }
        return record
    }

    /// Stores a batch of the group commit with one statement, in one transaction; the records in the batch's order.
    func storeFinishedSends(_ batch: [FinishedSend]) async throws -> [Result<SendRecord, StoreError>] {
        if batch.count == 1 { return [try await storeFinishedSend(batch[0])] }
        // A second send of one id in a batch is refused as the store would refuse it once the first is stored.
        var queued = Set<SendID>()
        let firsts = batch.filter { queued.insert($0.send.id).inserted }
        let statement = StoreSQL.insertFinishedSends(firsts.map { ($0.send, $0.outcomes, $0.at) })
        let stored = try await withWebhookEvents("record \(firsts.count) finished sends") { session in
            let records = try await session.rows(statement).map { try $0.send() }
            let outcomes = Dictionary(firsts.map { ($0.send.id, $0) }, uniquingKeysWith: { first, _ in first })
            return (records, records.flatMap { Self.webhookEvents(of: $0, outcomes[$0.id]) })
        }
        var records = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return batch.map { finished in
            // The first of an id takes its record; a second finds none left.
            guard let record = records.removeValue(forKey: finished.send.id) else {
                return .failure(NewSend.alreadyExists(finished.send.id))
            }
            return .success(record)
        }
    }

    /// Stores one finished send on its own, a statement prepared once per connection.
    func storeFinishedSend(_ finished: FinishedSend) async throws -> Result<SendRecord, StoreError> {
        let statement = StoreSQL.insertFinishedSend(finished.send, outcomes: finished.outcomes, at: finished.at)
        return try await withWebhookEvents("record a finished send") {
            session -> (Result<SendRecord, StoreError>, [WebhookEventDraft]) in
            guard let row = try await session.rows(statement).first else {
                return (.failure(NewSend.alreadyExists(finished.send.id)), [])
            }
            let record = try row.send()
            return (.success(record), Self.webhookEvents(of: record, finished))
        }
    }

    public func tokensCorrected(by id: SendID, among tokens: [DeviceToken]) async throws -> Set<DeviceToken> {
        guard !tokens.isEmpty else { return [] }
        return try await session("read which devices a send corrected") { session in
            Set(
                try await session.rows(StoreSQL.tokensCorrected(by: id, among: tokens)).map {
                    try DeviceToken(storedHex: $0.text(0))
                })
        }
    }

    public func send(_ id: SendID) async throws -> SendRecord? {
        try await session("read a send") { session in
            try await session.rows(StoreSQL.selectSend(id, .postgres)).first?.send()
        }
    }

    public func outcomes(of id: SendID, after cursor: OutcomeCursor?, limit: Int) async throws -> OutcomePage {
        let read = OutcomePageRead(of: id, after: cursor, limit: limit)
        return try await session("read delivery outcomes") { session in
            let rows = try await session.rows(read.rowsRead(.postgres))
            let batches = try await session.rows(read.batchesRead(.postgres))
            let tokens =
                if let statement = try read.tokensRead(rows: rows, batches: batches, .postgres) {
                    try await session.rows(statement)
                } else { [PostgresRandomAccessRow]() }
            return try read.page(rows: rows, tokens: tokens)
        }
    }

    public func withInstanceLock<T: Sendable>(
        _ instance: String, _ body: @escaping @Sendable (InstanceLock) async throws -> T
    ) async throws -> T {
        let key = Self.instanceLockKey(instance, schema: configuration.schema)
        // A session-level lock lives as long as its connection: one is kept out of the pool for it until `body` ends,
        // and the lock is released before the connection goes back. The process dying closes the connection, and
        // PostgreSQL releases the lock then. A restart, a failover or a network fault closes it too, and the lock goes
        // with it: the holder takes it again on a new connection once the database answers.
        let holder = InstanceLockHolder(instance: instance, logger: events)
        let take: @Sendable () async throws -> Bool = {
            try await holder.take { taken in try await self.holdInstanceLock(key, instance: instance, taken: taken) }
        }
        let lock = InstanceLock(instance: instance, isHeld: { holder.isHeld }, take: take)
        _ = try await lock.acquire()
        do {
            let result = try await body(lock)
            await holder.release()
            return result
        } catch {
            await holder.release()
            throw error
        }
    }

    /// Takes the instance's lock on a connection of its own and keeps it there until the caller is cancelled (the lock
    /// is then released) or the connection closes (it went with it). `taken` says whether the lock was taken.
    private func holdInstanceLock(_ key: Int64, instance: String, taken: @escaping @Sendable (Bool) -> Void)
        async throws
    {
        try await session("hold the lock of instance \(instance)") { session in
            let rows: [PostgresRandomAccessRow]
            do {
                rows = try await session.rows(
                    SQLStatement(.postgres, "SELECT pg_try_advisory_lock($1)::int", [.integer(key)]))
            } catch {
                throw Self.map(error, "take the lock of instance \(instance)")
            }
            let held = try rows.first?.integer(0) == 1
            taken(held)
            guard held else { return }
            let connection = session.connection
            _ = try? await session.whileCallerWaits {
                let closed = OneShot<Void>()
                connection.closeFuture.whenComplete { _ in _ = closed.fulfil(()) }
                try await closed.wait()
            }
            // A closed connection took the lock with it (PostgreSQL releases a session's locks when it ends).
            guard session.isConnected else { return }
            try? await session.execute(SQLStatement(.postgres, "SELECT pg_advisory_unlock($1)", [.integer(key)]))
        }
    }

    public func requeueAbandonedSends(of lock: InstanceLock, keeping worker: String) async throws -> [SendID] {
        // Another instance's worker may be alive: only its lease running out says it is not. A worker of this
        // instance is not, since this process holds the instance's lock.
        guard lock.isHeld else { return [] }
        let now = clock.now()
        return try await transaction("put back abandoned sends") { session in
            let sends = try await session.rows(
                StoreSQL.requeueSends(exceptWorker: worker, workerPrefix: lock.workerPrefix, at: now, .postgres))
            let shards = try await session.rows(
                StoreSQL.requeueShards(exceptWorker: worker, workerPrefix: lock.workerPrefix, at: now, .postgres))
            return Array(Set(try (sends + shards).compactMap { SendID(try $0.text(0)) }))
        }
    }

    /// The advisory lock key of an instance id in a schema: 64 bits of FNV-1a, so that the key is the same in every
    /// process and every release of Herald. Two ids that collide only make the second fall back to waiting for leases.
    package static func instanceLockKey(_ instance: String, schema: String?) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "herald.instance\u{0}\(schema ?? "")\u{0}\(instance)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}

/// An inline send's record waiting for its batch: the send, its outcomes, and when it finished.
extension PostgresStore {
    /// The outcome events of a finished send, and its end.
    fileprivate static func webhookEvents(of record: SendRecord, _ finished: FinishedSend?) -> [WebhookEventDraft] {
        (finished?.outcomes ?? []).flatMap { WebhookEventDraft.events(of: $0, in: record.id) }
            + [WebhookEventDraft.event(ofEnded: record, at: finished?.at ?? record.updatedAt)].compactMap { $0 }
    }
}

struct FinishedSend: Sendable {
    let send: NewSend
    let outcomes: [DeliveryOutcome]
    let at: Date

    /// A batch in send id order: the order its rows are inserted, and locked, in.
    static func lockOrder(_ batch: [FinishedSend]) -> [Int] {
        let ids = batch.map(\.send.id.description)
        return batch.indices.sorted { ids[$0] < ids[$1] }
    }
}
