public import Foundation
import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func shardSend(_ id: SendID, worker: String, boundaries: [DeviceCursor], size: Int, targetCount: Int)
        async throws -> Bool
    {
        let now = clock.now()
        return try await write("cut a send into shards") { db in
            guard try !db.rows(StoreSQL.markSharded(id, worker: worker, shards: boundaries.count + 1, at: now, .sqlite))
                .isEmpty
            else { return false }
            let rows = StoreSQL.insertShards(
                id, boundaries: boundaries, size: size, targetCount: targetCount, at: now, .sqlite)
            for row in rows { try db.execute(row) }
            return true
        }
    }

    public func claimShard(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>, precedence: ClaimPrecedence
    ) async throws -> (send: SendRecord, shard: SendShard)? {
        guard !lanes.isEmpty else { return nil }
        let now = clock.now()
        return try await write("claim a shard") { db in
            let claim = StoreSQL.claimShard(
                worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: excluding, precedence: precedence,
                at: now, .sqlite)
            guard let row = try db.rows(claim).first else { return nil }
            let shard = try SendShard(stored: row)
            guard let send = try db.rows(StoreSQL.selectSend(shard.send, .sqlite)).first else {
                throw SendRecord.notFound(shard.send)
            }
            return (try send.send(), shard)
        }
    }

    public func endShardRun(of id: SendID, shard: Int, worker: String, status: SendShard.Status) async throws
        -> SendRecord?
    {
        let now = clock.now()
        return try await write("end a shard's run") { db in
            guard try !db.rows(StoreSQL.endShardRun(id, shard: shard, worker: worker, status: status, at: now, .sqlite))
                .isEmpty, status == .done
            else { return nil }
            let send = try db.rows(StoreSQL.completeShardedSend(id, at: now, .sqlite)).first?.send()
            if let ended = send.flatMap({ WebhookEventDraft.event(ofEnded: $0, at: now) }) {
                try db.writeWebhookEvents([ended])
            }
            return send
        }
    }

    public func recordOutcomes(_ outcomes: [DeliveryOutcome], for id: SendID, shard: Int, checkpoint: DeviceCursor?)
        async throws -> OutcomeCounts
    {
        try await record(outcomes, for: id, shard: shard, checkpoint: checkpoint)
    }
}
