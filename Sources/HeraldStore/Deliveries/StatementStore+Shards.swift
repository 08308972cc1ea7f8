package import Foundation
import HeraldCore

extension StatementStore {
    public func shards(of id: SendID) async throws -> [SendShard] {
        try await readRows("read a send's shards", StoreSQL.selectShards(of: id, dialect)).map {
            try SendShard(stored: $0)
        }
    }

    public func renewShardLease(of id: SendID, shard: Int, worker: String, until: Date) async throws -> Bool {
        let statement = StoreSQL.renewShardLease(id, shard: shard, worker: worker, until: until, at: clock.now(), dialect)
        return try await !writeRows("renew a shard's lease", statement).isEmpty
    }
}
