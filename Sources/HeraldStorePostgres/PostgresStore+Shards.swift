public import Foundation
import HeraldCore
public import HeraldStore

extension PostgresStore {
    public func shardSend(_ id: SendID, worker: String, boundaries: [DeviceCursor], size: Int, targetCount: Int)
        async throws -> Bool
    {
        let now = clock.now()
        return try await transaction("cut a send into shards") { session in
            let marked = StoreSQL.markSharded(id, worker: worker, shards: boundaries.count + 1, at: now, .postgres)
            guard try await !session.rows(marked).isEmpty else { return false }
            let rows = StoreSQL.insertShards(
                id, boundaries: boundaries, size: size, targetCount: targetCount, at: now, .postgres)
            for row in rows { try await session.execute(row) }
            // The other instances' workers take shards of it as soon as it commits.
            try await self.notifyWork(session)
            return true
        }
    }

    public func claimShard(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>, precedence: ClaimPrecedence
    ) async throws -> (send: SendRecord, shard: SendShard)? {
        guard !lanes.isEmpty else { return nil }
        let now = clock.now()
        return try await transaction("claim a shard") { session in
            let claim = StoreSQL.claimShard(
                worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: excluding, precedence: precedence,
                at: now, .postgres)
            guard let row = try await session.rows(claim).first else { return nil }
            let shard = try SendShard(stored: row)
            guard let send = try await session.rows(StoreSQL.selectSend(shard.send, .postgres)).first else {
                throw SendRecord.notFound(shard.send)
            }
            return (try send.send(), shard)
        }
    }

    public func endShardRun(of id: SendID, shard: Int, worker: String, status: SendShard.Status) async throws
        -> SendRecord?
    {
        let now = clock.now()
        return try await transaction("end a shard's run") { session in
            // The send's row first: two workers ending its last two shards at once then run one after the other, and
            // the second sees the first's shard done. The shard's row next (the run's end): what it counted then
            // moves onto the send.
            guard try await session.rows(StoreSQL.lockSend(id, .postgres)).first != nil,
                try await !session.rows(
                    StoreSQL.endShardRun(id, shard: shard, worker: worker, status: status, at: now, .postgres)
                ).isEmpty
            else { return nil }
            try await session.execute(StoreSQL.moveShardCounts(id, shard: shard))
            guard status == .done else {
                // A shard put back (this instance stops) is for another instance to take.
                try await self.notifyWork(session)
                return nil
            }
            let send = try await session.rows(StoreSQL.completeShardedSend(id, at: now, .postgres)).first?.send()
            if let ended = send.flatMap({ WebhookEventDraft.event(ofEnded: $0, at: now) }) {
                try await session.writeWebhookEvents([ended])
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
