import Foundation
import GRDB
public import HeraldCore
public import HeraldStore
import Synchronization

extension SQLiteStore {
    public func createSend(_ send: NewSend) async throws -> SendRecord {
        let now = clock.now()
        return try await write("record a send") { db in
            guard let row = try db.rows(StoreSQL.insertSend(send, at: now, .sqlite)).first else {
                throw NewSend.alreadyExists(send.id)
            }
            if let audit = send.audit { try db.execute(StoreSQL.insertAudit(audit.clipped(), .sqlite)) }
            return try row.send()
        }
    }

    public func updateSend(_ id: SendID, _ update: SendUpdate) async throws -> SendRecord {
        let now = clock.now()
        return try await write("update a send") { db in
            guard let row = try db.rows(StoreSQL.updateSend(id, update, at: now, .sqlite)).first else {
                throw SendRecord.notFound(id)
            }
            let send = try row.send()
            if update.status == send.status, let ended = WebhookEventDraft.event(ofEnded: send, at: now) {
                try db.writeWebhookEvents([ended])
            }
            return send
        }
    }

    public func recordOutcomes(_ outcomes: [DeliveryOutcome], for id: SendID, checkpoint: DeviceCursor?)
        async throws -> OutcomeCounts
    {
        try await record(outcomes, for: id, shard: nil, checkpoint: checkpoint)
    }

    /// Records a batch of outcomes; the checkpoint is the shard's when one is given, else the send's.
    func record(_ outcomes: [DeliveryOutcome], for id: SendID, shard: Int?, checkpoint: DeviceCursor?) async throws
        -> OutcomeCounts
    {
        let now = clock.now()
        return try await write("record delivery outcomes") { db in
            guard try db.rows(StoreSQL.lockSend(id, .sqlite)).first != nil else { throw SendRecord.notFound(id) }
            var recording = OutcomeRecording(outcomes, of: id, shard: shard)
            let batch = try db.record(&recording)
            // Events only for what is recorded now: a batch recorded again must not announce its devices twice.
            try db.writeWebhookEvents(recording.recordedNow.flatMap { WebhookEventDraft.events(of: $0, in: id) })
            let update = StoreSQL.addCounts(batch, to: id, checkpoint: shard == nil ? checkpoint : nil, at: now, .sqlite)
            guard let row = try db.rows(update).first else { throw SendRecord.notFound(id) }
            if let shard {
                try db.execute(
                    StoreSQL.shardProgress(
                        id, shard: shard, checkpoint: checkpoint, recorded: batch.total, at: now, .sqlite))
            }
            return try OutcomeCounts(stored: row)
        }
    }

    public func recordFinishedSend(_ send: NewSend, outcomes: [DeliveryOutcome]) async throws -> SendRecord {
        let now = clock.now()
        var finished = send
        finished.lane = .inline
        return try await write("record a finished send") { [finished] db in
            guard try db.rows(StoreSQL.insertSend(finished, at: now, .sqlite)).first != nil else {
                throw NewSend.alreadyExists(send.id)
            }
            if let audit = send.audit { try db.execute(StoreSQL.insertAudit(audit.clipped(), .sqlite)) }
            let counts = try db.insertOutcomes(outcomes, of: send.id, firstSequence: 1)
            _ = try db.rows(StoreSQL.addCounts(counts, to: send.id, checkpoint: nil, at: now, .sqlite))
            guard let row = try db.rows(StoreSQL.selectSend(send.id, .sqlite)).first else {
                throw SendRecord.notFound(send.id)
            }
            let record = try row.send()
            try db.writeWebhookEvents(
                outcomes.flatMap { WebhookEventDraft.events(of: $0, in: send.id) }
                    + [WebhookEventDraft.event(ofEnded: record, at: now)].compactMap { $0 })
            return record
        }
    }

    public func tokensCorrected(by id: SendID, among tokens: [DeviceToken]) async throws -> Set<DeviceToken> {
        guard let statement = StoreSQL.tokensCorrected(by: id, among: tokens, .sqlite) else { return [] }
        let asked = Set(tokens)
        return try await read("read which devices a send corrected") { db in
            Set(try db.rows(statement).map { try DeviceToken(storedHex: $0.text(0)) }.filter(asked.contains))
        }
    }

    public func send(_ id: SendID) async throws -> SendRecord? {
        try await quickRows("read a send", StoreSQL.selectSend(id, .sqlite)).first?.send()
    }

    public func outcomes(of id: SendID, after cursor: OutcomeCursor?, limit: Int) async throws -> OutcomePage {
        let page = OutcomePageRead(of: id, after: cursor, limit: limit)
        return try await read("read delivery outcomes") { db in
            let rows = try db.rows(page.rowsRead(.sqlite))
            let batches = try db.rows(page.batchesRead(.sqlite))
            let tokens = try page.tokensRead(rows: rows, batches: batches, .sqlite).map { try db.rows($0) } ?? []
            return try page.page(rows: rows, tokens: tokens)
        }
    }

    public func withInstanceLock<T: Sendable>(
        _ instance: String, _ body: @escaping @Sendable (InstanceLock) async throws -> T
    ) async throws -> T {
        // One server owns a SQLite database: the lock is the database's, whatever the instance id, so two stores on
        // one file in one process never both put back each other's sends.
        let key = databaseLockKey
        let take: @Sendable () -> Bool = { Self.heldDatabases.withLock { $0.insert(key).inserted } }
        let lock = InstanceLock(instance: instance, held: take(), take: take)
        defer {
            if lock.isHeld { _ = Self.heldDatabases.withLock { $0.remove(key) } }
        }
        return try await body(lock)
    }

    public func requeueAbandonedSends(of lock: InstanceLock, keeping worker: String) async throws -> [SendID] {
        guard lock.isHeld else { return [] }
        let now = clock.now()
        return try await write("put back abandoned sends") { db in
            let sends = try db.rows(StoreSQL.requeueSends(exceptWorker: worker, at: now, .sqlite))
            let shards = try db.rows(StoreSQL.requeueShards(exceptWorker: worker, workerPrefix: nil, at: now, .sqlite))
            return Array(Set(try (sends + shards).compactMap { SendID(try $0.text(0)) }))
        }
    }
}
