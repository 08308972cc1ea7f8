package import Foundation

extension StoreSQL {
    /// The columns of `send_shards`, in the order ``SendShard/init(stored:)`` reads them.
    package static let shardColumns =
        "send_id, shard, after_cursor, through_cursor, status, worker, lease_until, checkpoint, size, recorded"

    /// Moves the counts a shard holds (``recordShardOutcomesSQL``) onto its send, in the transaction that ends the
    /// shard's run, after ``lockSend(_:_:)`` and ``endShardRun(_:shard:worker:status:at:_:)`` (which locks the shard's
    /// row): the send's counts then need no sum once its shards' runs ended. One PostgreSQL statement: the shard lets
    /// go of its counts (the joined row is the one before the update) and the send takes them.
    package static func moveShardCounts(_ id: SendID, shard: Int) -> SQLStatement {
        SQLStatement(
            .postgres,
            """
            WITH moved AS (UPDATE send_shards h SET accepted = 0, rejected = 0, failed = 0 FROM send_shards held \
            WHERE h.send_id = $1 AND h.shard = $2 AND held.send_id = h.send_id AND held.shard = h.shard \
            AND held.accepted + held.rejected + held.failed > 0 \
            RETURNING held.accepted, held.rejected, held.failed) \
            UPDATE sends SET accepted = sends.accepted + moved.accepted, rejected = sends.rejected + moved.rejected, \
            failed = sends.failed + moved.failed FROM moved WHERE sends.id = $1
            """, [.text(id.description), .integer(Int64(shard))])
    }

    /// The rows of a send cut at some boundaries: shard `i` after boundary `i − 1` through boundary `i`, the last one
    /// to the end, each of `size` devices but the last, which holds what is left of `targetCount`.
    package static func insertShards(
        _ id: SendID, boundaries: [DeviceCursor], size: Int, targetCount: Int, at now: Date,
        _ dialect: SQLStatement.Dialect
    ) -> [SQLStatement] {
        (0...boundaries.count).map { index in
            let last = index == boundaries.count
            return insertShard(
                id, index: index, after: index == 0 ? nil : boundaries[index - 1], through: last ? nil : boundaries[index],
                size: last ? max(targetCount - size * boundaries.count, 0) : size, at: now, dialect)
        }
    }

    /// A queued shard of a send.
    private static func insertShard(
        _ id: SendID, index: Int, after: DeviceCursor?, through: DeviceCursor?, size: Int, at now: Date,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            INSERT INTO send_shards (send_id, shard, after_cursor, through_cursor, status, size, recorded, updated_at) \
            VALUES ($1, $2, $3, $4, 'queued', $5, 0, $6)
            """,
            [
                .text(id.description), .integer(Int64(index)), .textOrNull(after?.description),
                .textOrNull(through?.description), .integer(Int64(size)), .integer(StoreTime.microseconds(now)),
            ])
    }

    /// Marks a running send its worker holds as cut into shards and lets go of it: a sharded send is no longer
    /// claimed whole, only its shards are. Returns the send's id when the worker held it.
    package static func markSharded(
        _ id: SendID, worker: String, shards: Int, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE sends SET shard_count = $3, worker = NULL, lease_until = NULL, checkpoint = NULL, updated_at = $4 \
            WHERE id = $1 AND worker = $2 AND status = 'running' RETURNING id
            """,
            [.text(id.description), .text(worker), .integer(Int64(shards)), .integer(StoreTime.microseconds(now))])
    }

    /// Gives the first waiting shard (queued, or running under a lease that ran out) of the running sends of some lanes
    /// to a worker, by their app's priority then oldest first, leaving out some sends; returns the shard. On PostgreSQL, concurrent claimers skip the
    /// shard another one locked.
    package static func claimShard(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>,
        precedence: ClaimPrecedence = .none, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let claim = statement.bindClaim(
            worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: excluding, column: "h.send_id", at: now)
        let order = claimOrder(
            lanes: lanes, precedence: precedence, laneColumn: "s.lane", topicColumn: "s.topic", in: &statement)
        statement.sql = """
            UPDATE send_shards SET status = 'running', worker = \(claim.worker), lease_until = \(claim.lease), \
            updated_at = \(claim.now) WHERE (send_id, shard) = (SELECT h.send_id, h.shard FROM send_shards h \
            JOIN sends s ON s.id = h.send_id WHERE h.status <> 'done' \
            AND (h.status = 'queued' OR h.lease_until < \(claim.now)) AND s.status = 'running' \
            AND s.lane IN (\(claim.lanes))\(claim.excluded) ORDER BY \(order)s.created_at, h.send_id, h.shard LIMIT 1\
            \(dialect == .postgres ? " FOR UPDATE OF h SKIP LOCKED" : "")) RETURNING \(shardColumns)
            """
        return statement
    }

    /// A send's shards, in order.
    package static func selectShards(of id: SendID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT \(shardColumns) FROM send_shards WHERE send_id = $1 ORDER BY shard",
            [.text(id.description)])
    }

    /// Extends a worker's lease on a running shard; returns the shard when the worker holds it.
    package static func renewShardLease(
        _ id: SendID, shard: Int, worker: String, until: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE send_shards SET lease_until = $4, updated_at = $5 \
            WHERE send_id = $1 AND shard = $2 AND worker = $3 AND status = 'running' RETURNING shard
            """,
            [
                .text(id.description), .integer(Int64(shard)), .text(worker), .integer(StoreTime.microseconds(until)),
                .integer(StoreTime.microseconds(now)),
            ])
    }

    /// Ends a worker's run of a shard: `done`, or back to `queued` (a shutdown, a cancellation). Returns the shard
    /// when the worker held it.
    package static func endShardRun(
        _ id: SendID, shard: Int, worker: String, status: SendShard.Status, at now: Date,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE send_shards SET status = $4, worker = NULL, lease_until = NULL, updated_at = $5 \
            WHERE send_id = $1 AND shard = $2 AND worker = $3 AND status = 'running' RETURNING shard
            """,
            [
                .text(id.description), .integer(Int64(shard)), .text(worker), .text(status.rawValue),
                .integer(StoreTime.microseconds(now)),
            ])
    }

    /// Completes a running sharded send once every shard is done; returns the send when it did. Run after
    /// ``lockSend(_:_:)`` on PostgreSQL, so two workers finishing its last shards at once cannot both miss it.
    package static func completeShardedSend(_ id: SendID, at now: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            UPDATE sends SET status = 'completed', updated_at = $2 WHERE id = $1 AND status = 'running' \
            AND shard_count IS NOT NULL \
            AND NOT EXISTS (SELECT 1 FROM send_shards WHERE send_id = $1 AND status <> 'done') RETURNING \(liveSendColumns)
            """,
            [.text(id.description), .integer(StoreTime.microseconds(now))])
    }

    /// Moves a shard's checkpoint and adds to the outcomes it recorded.
    package static func shardProgress(
        _ id: SendID, shard: Int, checkpoint: DeviceCursor?, recorded: Int, at now: Date,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE send_shards SET checkpoint = coalesce($3, checkpoint), recorded = recorded + $4, updated_at = $5 \
            WHERE send_id = $1 AND shard = $2
            """,
            [
                .text(id.description), .integer(Int64(shard)), .textOrNull(checkpoint?.description),
                .integer(Int64(recorded)), .integer(StoreTime.microseconds(now)),
            ])
    }

    /// Puts the running shards held by any worker but one back in the queue — only those whose worker name starts
    /// with `prefix` when one is given; returns their sends' ids.
    package static func requeueShards(
        exceptWorker worker: String, workerPrefix prefix: String?, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        requeueRuns(in: "send_shards", returning: "send_id", exceptWorker: worker, workerPrefix: prefix, at: now, dialect)
    }
}
