import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var shardCases: [Case] {
        [
            Case(
                "shard boundaries cut a query's order every n devices, and bounded pages walk each shard once",
                shardBoundaries),
            Case(
                "a sharded send is claimed shard by shard by any worker, records on its shards, and completes with its last shard",
                shardLifecycle),
            Case(
                "a shard whose lease ran out is taken over after its checkpoint; shards of a cancelled send are never claimed",
                shardTakeOver),
            Case("shards of a high-priority app's send are claimed before an older send's of a normal app", shardPriority),
        ]
    }

    static func shardBoundaries(_ context: Context) async throws {
        let store = context.store
        for n in 1...25 { _ = try await store.upsert(registration(n, environment: n % 2 == 0 ? .production : .development)) }
        for ordered in [DeviceQuery.topic("com.example.herald"), .topic("com.example.herald").environment(.development)] {
            let total = try await store.count(matching: ordered)
            let boundaries = try await store.shardBoundaries(matching: ordered, size: 5, limit: 100)
            #expect(boundaries.count == (total - 1) / 5, "\(ordered): a boundary every 5, none at the very end")
            #expect(try await store.shardBoundaries(matching: ordered, size: 5, limit: 2).count == min(2, boundaries.count))
            let shards = try await walkShards(store, ordered, boundaries)
            for (index, shard) in shards.enumerated() {
                #expect(index == boundaries.count ? shard.count <= 5 : shard.count == 5, "shard \(index)")
            }
            let seen = shards.flatMap { $0 }
            #expect(seen.count == total && Set(seen).count == total)
        }
        #expect(try await store.shardBoundaries(matching: .topic("com.none.herald"), size: 5, limit: 10).isEmpty)

        // The rules about the person do not move the cuts: they count the target, so a shard holds at most 5 matches,
        // and the shards together hold every match once.
        for n in 1...10 {
            _ = try await store.updatePreferences(
                topic: topic, subject: .token(token(n)), choices: ["marketing": false], at: context.clock.now())
        }
        let target = DeviceQuery.topic(topic)
        let ruled = target.preference(PreferenceFilter(category: "marketing", enabledByDefault: true))
        let boundaries = try await store.shardBoundaries(matching: ruled, size: 5, limit: 100)
        #expect(try await boundaries == store.shardBoundaries(matching: target, size: 5, limit: 100))
        let shards = try await walkShards(store, ruled, boundaries)
        #expect(shards.allSatisfy { $0.count <= 5 }, "\(shards.map(\.count))")
        #expect(shards.flatMap { $0 }.map { Int($0.hex, radix: 16)! }.sorted() == Array(11...25))
    }

    /// The devices of each shard a query's boundaries cut, read page by page from the shard's start through its end;
    /// checks that the shard's range as a query of its own (a shard's time zones, its count) holds the same devices.
    private static func walkShards(_ store: any Store, _ ordered: DeviceQuery, _ boundaries: [DeviceCursor])
        async throws -> [[DeviceToken]]
    {
        var shards: [[DeviceToken]] = []
        for index in 0...boundaries.count {
            let query = ordered.through(index == boundaries.count ? nil : boundaries[index])
            var cursor = index == 0 ? nil : boundaries[index - 1]
            var shard: [DeviceToken] = []
            repeat {
                let page = try await store.devices(matching: query, after: cursor, limit: 2)
                shard += page.devices.map(\.token)
                cursor = page.next
            } while cursor != nil
            let range = query.after(index == 0 ? nil : boundaries[index - 1])
            #expect(try await store.count(matching: range) == shard.count, "shard \(index)")
            #expect(try await all(store, range, pageSize: 2).map(\.token) == shard, "shard \(index)")
            shards.append(shard)
        }
        return shards
    }

    /// A queued send claimed by `worker` and cut into three shards of 10 devices.
    static func shardedSend(_ context: Context, worker: String = "planner", topic: String? = nil) async throws
        -> SendRecord
    {
        let store = context.store
        for n in 1...25 { _ = try await store.upsert(registration(n)) }
        let query = DeviceQuery.topic("com.example.herald")
        let send = try await store.createSend(
            NewSend(target: "every device", summary: "s", job: "{}", targetCount: 25, lane: .campaign, topic: topic))
        let lease = context.clock.now().addingTimeInterval(60)
        #expect(try await store.claimNextQueuedSend(worker: worker, leaseUntil: lease)?.id == send.id)
        let boundaries = try await store.shardBoundaries(matching: query, size: 10, limit: 100)
        #expect(!(try await store.shardSend(send.id, worker: "not-the-holder", boundaries: boundaries, size: 10, targetCount: 25)))
        #expect(try await store.shardSend(send.id, worker: worker, boundaries: boundaries, size: 10, targetCount: 25))
        return try #require(try await store.send(send.id))
    }

    static func shardLifecycle(_ context: Context) async throws {
        let store = context.store
        let send = try await shardedSend(context)
        #expect(send.shardCount == 3 && send.worker == nil && send.status == .running)
        let shards = try await store.shards(of: send.id)
        #expect(shards.map(\.size) == [10, 10, 5] && shards.allSatisfy { $0.status == .queued })
        #expect(shards[0].after == nil && shards[2].through == nil && shards[1].after == shards[0].through)
        let lease = context.clock.now().addingTimeInterval(30)
        #expect(try await store.claimNextQueuedSend(worker: "x", leaseUntil: lease) == nil, "claimed by shard only")
        #expect(try await store.claimShard(worker: "a", leaseUntil: lease, lanes: [.background], excluding: []) == nil)

        let first = try #require(try await store.claimShard(worker: "a", leaseUntil: lease, lanes: [.campaign], excluding: []))
        #expect(first.send.id == send.id && first.shard.index == 0 && first.shard.worker == "a")
        #expect(
            try await store.claimShard(worker: "a", leaseUntil: lease, lanes: [.campaign], excluding: [send.id]) == nil,
            "a worker can leave out the sends it runs enough shards of")
        let second = try #require(try await store.claimShard(worker: "b", leaseUntil: lease, lanes: [.campaign], excluding: []))
        let third = try #require(try await store.claimShard(worker: "b", leaseUntil: lease, lanes: [.campaign], excluding: []))
        #expect(second.shard.index == 1 && third.shard.index == 2)
        #expect(try await store.claimShard(worker: "c", leaseUntil: lease, lanes: [.campaign], excluding: []) == nil)
        #expect(try await store.renewShardLease(of: send.id, shard: 0, worker: "a", until: lease.addingTimeInterval(30)))
        #expect(try await !store.renewShardLease(of: send.id, shard: 0, worker: "b", until: lease))

        // Outcomes of a shard add to the send's counts and move the shard's checkpoint, not the send's.
        let page = try await store.devices(matching: .topic("com.example.herald").through(first.shard.through), after: nil, limit: 4)
        let outcomes = page.devices.map {
            DeliveryOutcome(token: $0.token, environment: $0.environment, result: .accepted(apnsID: APNSID()), at: context.clock.now())
        }
        let counts = try await store.recordOutcomes(outcomes, for: send.id, shard: 0, checkpoint: page.next)
        #expect(counts.accepted == 4)
        let progressed = try await store.shards(of: send.id)[0]
        #expect(progressed.checkpoint == page.next && progressed.recorded == 4 && progressed.resumesAfter == page.next)
        #expect(try await store.send(send.id)?.checkpoint == nil)

        // Another shard's batch, and a device of shard 0 again: the send's counts, read whole or in a list, hold
        // every shard's, each device once, and so do its outcomes, page by page.
        let secondPage = try await store.devices(
            matching: .topic("com.example.herald").after(second.shard.after).through(second.shard.through), after: nil,
            limit: 3)
        let failed = secondPage.devices.map {
            DeliveryOutcome(
                token: $0.token, environment: $0.environment, result: .failed(message: "gave up"), at: context.clock.now())
        }
        let both = try await store.recordOutcomes(failed, for: send.id, shard: 1, checkpoint: secondPage.next)
        #expect(both.accepted == 4 && both.failed == 3, "the send's counts: \(both)")
        let again = try await store.recordOutcomes(Array(outcomes.prefix(1)), for: send.id, shard: 0, checkpoint: nil)
        #expect(again == both, "a device recorded already counts once")
        #expect(try await store.send(send.id)?.counts == both)
        #expect(try await outcomeGroups(of: send.id, in: store).map(\.count) == [4, 3])
        #expect(try await store.recentSends(after: nil, limit: 10).sends.first { $0.id == send.id }?.counts == both)
        var listed: [DeviceToken] = []
        var cursor: OutcomeCursor?
        repeat {
            let outcomePage = try await store.outcomes(of: send.id, after: cursor, limit: 3)
            listed += outcomePage.outcomes.map(\.token)
            cursor = outcomePage.next
        } while cursor != nil
        #expect(listed.count == 7 && Set(listed) == Set(page.devices.map(\.token) + secondPage.devices.map(\.token)))
        #expect(Array(listed.prefix(4)) == page.devices.map(\.token), "a shard's outcomes in the order recorded")

        #expect(try await store.endShardRun(of: send.id, shard: 0, worker: "b", status: .done) == nil, "not b's shard")
        #expect(try await store.endShardRun(of: send.id, shard: 0, worker: "a", status: .done) == nil, "two left")
        #expect(try await store.send(send.id)?.counts == both, "a shard's counts stay the send's once its run ends")
        #expect(try await store.endShardRun(of: send.id, shard: 2, worker: "b", status: .queued) == nil)
        #expect(try await store.shards(of: send.id).map(\.status) == [.done, .running, .queued])
        #expect(try await store.endShardRun(of: send.id, shard: 1, worker: "b", status: .done) == nil, "one left")
        #expect(try await store.send(send.id)?.counts == both)
        let last = try #require(try await store.claimShard(worker: "c", leaseUntil: lease, lanes: [.campaign], excluding: []))
        #expect(last.shard.index == 2, "a shard put back is claimed again")
        let completed = try await store.endShardRun(of: send.id, shard: 2, worker: "c", status: .done)
        #expect(completed?.id == send.id && completed?.status == .completed && completed?.counts == both)
        #expect(try await store.send(send.id)?.counts == both)
        #expect(try await store.claimShard(worker: "d", leaseUntil: lease, lanes: [.campaign], excluding: []) == nil)
    }

    static func shardPriority(_ context: Context) async throws {
        let store = context.store
        let older = try await shardedSend(context, topic: "com.normal.app")
        context.clock.advance(by: .seconds(1))
        let urgent = try await shardedSend(context, topic: "com.high.app")
        let lease = context.clock.now().addingTimeInterval(30)
        let precedence = ClaimPrecedence(priorities: ["com.high.app": .high])
        var order: [SendID] = []
        while let claimed = try await store.claimShard(
            worker: "w", leaseUntil: lease, lanes: [.campaign], excluding: [], precedence: precedence)
        {
            order.append(claimed.send.id)
        }
        #expect(order == [urgent.id, urgent.id, urgent.id, older.id, older.id, older.id])
    }

    static func shardTakeOver(_ context: Context) async throws {
        let store = context.store
        let send = try await shardedSend(context)
        let short = context.clock.now().addingTimeInterval(10)
        _ = try #require(try await store.claimShard(worker: "dead", leaseUntil: short, lanes: [.campaign], excluding: []))
        context.clock.advance(by: .seconds(11))
        let taken = try #require(
            try await store.claimShard(
                worker: "alive", leaseUntil: context.clock.now().addingTimeInterval(60), lanes: [.campaign], excluding: []))
        #expect(taken.shard.index == 0 && taken.shard.worker == "alive", "the shard whose lease ran out comes first")
        #expect(try await !store.renewShardLease(of: send.id, shard: 0, worker: "dead", until: context.clock.now()))

        // An instance restarted with its lock puts back the shards its earlier run held.
        _ = try await store.endShardRun(of: send.id, shard: 0, worker: "alive", status: .queued)
        _ = try #require(
            try await store.claimShard(
                worker: "alpha/1/old", leaseUntil: context.clock.now().addingTimeInterval(600), lanes: [.campaign],
                excluding: []))
        let putBack = try await store.withInstanceLock("alpha") { lock in
            try await store.requeueAbandonedSends(of: lock, keeping: "alpha/2/new")
        }
        #expect(putBack == [send.id])
        #expect(try await store.shards(of: send.id).map(\.status) == [.queued, .queued, .queued])

        _ = try await store.cancelSend(send.id)
        #expect(
            try await store.claimShard(
                worker: "late", leaseUntil: context.clock.now().addingTimeInterval(60), lanes: [.campaign], excluding: [])
                == nil, "a cancelled send's shards are never claimed")
    }
}
