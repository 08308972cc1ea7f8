public import Foundation
import HeraldCore
public import HeraldStore
import Testing

extension StoreConformance {
    static var deliveryCases: [Case] {
        [
            Case("a send records its outcomes in batches, counts them and pages them in order", deliveryRecords),
            Case("sends change status, and unknown sends are reported", sendUpdates),
            Case("an inline send is recorded whole, outcomes and counts, in one write", finishedSend),
            Case(
                "a send keeps one outcome per device: a device recorded again is left out, and a resumed send can ask which are done",
                oneOutcomePerDevice),
            Case("a checkpoint lets another instance resume a send where it stopped", checkpointResume),
            Case("workers claim different sends, and a send whose lease ran out can be claimed again", claims),
            Case("two instances claiming at once never get the same send", concurrentClaims),
            Case(
                "a worker claims only from the lanes it has room in, by lane rank then oldest first, never a send it runs itself, and waiting sends are counted per lane",
                laneClaims),
            Case(
                "within a lane a high-priority app's send is claimed first and a low one's last, oldest first among equals; never across lanes",
                priorityClaims),
            Case(
                "a restarted instance that holds its lock puts back at once the sends its earlier run held, not its own",
                restartedInstance),
            Case(
                "one process at a time holds an instance's lock; without it nothing is put back, and it can be taken once released",
                instanceLockExclusive),
        ]
    }

    public static func outcome(
        _ n: Int, _ result: DeliveryOutcome.Result, at date: Date, action: DeliveryOutcome.Action? = nil
    ) -> DeliveryOutcome {
        DeliveryOutcome(
            token: token(n), environment: n.isMultiple(of: 2) ? .development : .production, result: result, at: date,
            action: action)
    }

    /// A send's outcome groups read from its records; those counted from its counts (what a running send's console
    /// page reads) must be the same.
    static func outcomeGroups(of id: SendID, in store: any Store) async throws -> [OutcomeGroup] {
        let recorded = try await store.outcomeGroups(of: id)
        let counted = try await store.outcomeGroups(of: id, acceptancesFromCounts: true)
        #expect(counted == recorded, "the groups from the send's counts are those of its records")
        return recorded
    }

    static func deliveryRecords(_ context: Context) async throws {
        let store = context.store
        let created = try await store.createSend(
            NewSend(target: "topic \(topic)", summary: "alert: Hello", job: #"{"v":1}"#, targetCount: 250))
        #expect(created.status == .queued && created.counts == OutcomeCounts() && created.checkpoint == nil)
        #expect(created.createdAt == context.clock.now() && created.job == #"{"v":1}"# && created.targetCount == 250)
        #expect(try await store.send(created.id) == created)

        let now = context.clock.now()
        let timestamp = now.addingTimeInterval(-60)
        let outcomes: [DeliveryOutcome] = (1...250).map { n in
            switch n % 5 {
            case 0:
                outcome(
                    n, .rejected(status: 410, reason: .unregistered, timestamp: timestamp), at: now,
                    action: n.isMultiple(of: 10) ? .removed : .kept)
            case 1:
                outcome(n, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now, action: .removed)
            case 2: outcome(n, .failed(message: "connection reset after 3 attempts"), at: now)
            case 3: outcome(n, .accepted(apnsID: APNSID()), at: now, action: .environmentCorrected)
            default: outcome(n, .accepted(apnsID: APNSID()), at: now)
            }
        }
        var counts = OutcomeCounts()
        for batch in stride(from: 0, to: 250, by: 120) {
            let slice = Array(outcomes[batch..<min(batch + 120, 250)])
            let cursor = DeviceCursor(slice.last!.environment.name + ":" + slice.last!.token.hex)
            counts = try await store.recordOutcomes(slice, for: created.id, checkpoint: cursor)
        }
        #expect(counts == OutcomeCounts(accepted: 100, rejected: 100, failed: 50))
        #expect(try await store.send(created.id)?.counts == counts)
        #expect(try await store.send(created.id)?.checkpoint?.description.hasSuffix(outcomes[249].token.hex) == true)
        // A page whose every device was done before moves only the checkpoint: no outcomes, the same counts.
        let skipped = DeviceCursor("production:" + token(999).hex)
        #expect(try await store.recordOutcomes([], for: created.id, checkpoint: skipped) == counts)
        #expect(try await store.send(created.id)?.checkpoint == skipped)
        #expect(try await store.recordOutcomes([], for: created.id, checkpoint: nil) == counts, "no checkpoint: kept")
        #expect(try await store.send(created.id)?.checkpoint == skipped)

        var read: [DeliveryOutcome] = []
        var cursor: OutcomeCursor?
        var pages = 0
        repeat {
            let page = try await store.outcomes(of: created.id, after: cursor, limit: 100)
            read += page.outcomes
            cursor = page.next
            pages += 1
        } while cursor != nil
        #expect(pages == 3)
        #expect(read == outcomes, "every outcome, in the order recorded, exactly as given, with its action")
        #expect(try await store.outcomes(of: SendID(), after: nil, limit: 10).outcomes.isEmpty)
        let tail = try await store.outcomes(of: created.id, after: OutcomeCursor(sequence: 245), limit: 10)
        #expect(tail.outcomes == Array(outcomes.suffix(5)) && tail.next == nil)
    }

    static func oneOutcomePerDevice(_ context: Context) async throws {
        let store = context.store
        let send = try await store.createSend(NewSend(target: "topic", summary: "resumed", status: .running))
        let now = context.clock.now()
        let first = (1...10).map { outcome($0, .accepted(apnsID: APNSID()), at: now) }
        #expect(try await store.recordOutcomes(first, for: send.id, checkpoint: nil) == OutcomeCounts(accepted: 10))
        #expect(try await store.tokensWithOutcomes(of: send.id, among: (5...15).map(token)) == Set((5...10).map(token)))
        #expect(try await store.tokensWithOutcomes(of: SendID(), among: (5...15).map(token)).isEmpty)
        #expect(try await store.tokensWithOutcomes(of: send.id, among: []).isEmpty)

        // A resumed run sends devices 8…12 again (the first run died before it knew 8…10 were recorded).
        let again = (8...12).map { outcome($0, .failed(message: "timeout"), at: now, action: nil) }
        let counts = try await store.recordOutcomes(again, for: send.id, checkpoint: nil)
        #expect(counts == OutcomeCounts(accepted: 10, failed: 2), "only 11 and 12 are new")
        let page = try await store.outcomes(of: send.id, after: nil, limit: 100)
        #expect(page.outcomes == first + again.suffix(2), "the first outcome of a device stays")
        let more = try await store.recordOutcomes(
            [outcome(13, .accepted(apnsID: APNSID()), at: now)], for: send.id, checkpoint: nil)
        #expect(more.total == 13)
        let all = try await store.outcomes(of: send.id, after: nil, limit: 100)
        #expect(all.outcomes.map(\.token) == (1...13).map(token), "numbered after the last recorded one")
    }

    static func finishedSend(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let outcomes = [
            outcome(1, .accepted(apnsID: APNSID()), at: now),
            outcome(2, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed),
            outcome(3, .failed(message: "no connection"), at: now),
            outcome(4, .accepted(apnsID: APNSID()), at: now, action: .environmentCorrected),
        ]
        let new = NewSend(target: "user 7", summary: "alert", status: .completed, targetCount: 4)
        let recorded = try await store.recordFinishedSend(new, outcomes: outcomes)
        #expect(recorded.id == new.id && recorded.status == .completed && recorded.targetCount == 4)
        #expect(recorded.counts == OutcomeCounts(accepted: 2, rejected: 1, failed: 1))
        #expect(recorded.createdAt == now && recorded.job == nil)
        #expect(try await store.send(new.id) == recorded)
        #expect(try await store.outcomes(of: new.id, after: nil, limit: 10).outcomes == outcomes)

        // The same id again: refused, and nothing of it is written.
        await #expect(throws: StoreError.self) {
            try await store.recordFinishedSend(new, outcomes: [outcome(5, .accepted(apnsID: APNSID()), at: now)])
        }
        #expect(try await store.send(new.id)?.counts == recorded.counts)
        #expect(try await store.outcomes(of: new.id, after: nil, limit: 10).outcomes == outcomes)
        let empty = try await store.recordFinishedSend(
            NewSend(target: "user 8", summary: "alert", status: .completed, targetCount: 0), outcomes: [])
        #expect(empty.counts == OutcomeCounts() && empty.status == .completed)

        // A broadcast has no device outcomes: its counts and message come with the record, and outcomes add to them.
        let broadcast = try await store.recordFinishedSend(
            NewSend(
                target: "channel x", summary: "broadcast", status: .failed, targetCount: 1,
                counts: OutcomeCounts(rejected: 1), message: "APNs answered 400 BadExpirationDate"),
            outcomes: [])
        #expect(broadcast.counts == OutcomeCounts(rejected: 1) && broadcast.message == "APNs answered 400 BadExpirationDate")
        #expect(try await store.send(broadcast.id) == broadcast)
        let mixed = try await store.recordFinishedSend(
            NewSend(target: "t", summary: "s", status: .completed, counts: OutcomeCounts(accepted: 2)),
            outcomes: [outcome(6, .failed(message: "x"), at: now)])
        #expect(mixed.counts == OutcomeCounts(accepted: 2, failed: 1))
        let queued = try await store.createSend(
            NewSend(target: "channel y", summary: "broadcast", counts: OutcomeCounts(failed: 1), message: "note"))
        #expect(queued.counts == OutcomeCounts(failed: 1) && queued.message == "note")
    }

    static func sendUpdates(_ context: Context) async throws {
        let store = context.store
        let send = try await store.createSend(NewSend(target: "user 42", summary: "background", status: .running))
        await #expect(throws: StoreError.self) {
            try await store.createSend(NewSend(id: send.id, target: "x", summary: "y"))
        }
        context.clock.advance(by: .seconds(2))
        let counted = try await store.updateSend(send.id, SendUpdate(targetCount: 3))
        #expect(counted.status == .running && counted.targetCount == 3 && counted.updatedAt == context.clock.now())
        let done = try await store.updateSend(send.id, SendUpdate(status: .failed, message: "APNs key revoked"))
        #expect(done.status == .failed && done.message == "APNs key revoked" && done.targetCount == 3)
        #expect(done.status.isFinal)
        #expect(done.counts == OutcomeCounts(), "no update sets counts unless it carries them")
        let counted2 = try await store.updateSend(send.id, SendUpdate(counts: OutcomeCounts(accepted: 1)))
        #expect(counted2.counts == OutcomeCounts(accepted: 1) && counted2.message == "APNs key revoked")
        let kept = try await store.updateSend(send.id, SendUpdate(message: "later"))
        #expect(kept.counts == OutcomeCounts(accepted: 1), "counts left nil stay as stored")

        let missing = SendID()
        #expect(try await store.send(missing) == nil)
        let update = await #expect(throws: StoreError.self) {
            try await store.updateSend(missing, SendUpdate(status: .completed))
        }
        #expect(update?.code == .notFound)
        let record = await #expect(throws: StoreError.self) {
            try await store.recordOutcomes(
                [outcome(1, .failed(message: "x"), at: context.clock.now())], for: missing, checkpoint: nil)
        }
        #expect(record?.code == .notFound)
        #expect(try await store.outcomes(of: missing, after: nil, limit: 5).outcomes.isEmpty, "nothing was written")
    }

    static func checkpointResume(_ context: Context) async throws {
        let store = context.store
        for n in 1...30 { _ = try await store.upsert(registration(n)) }
        let send = try await store.createSend(NewSend(target: "topic", summary: "resumable"))
        let claimed = try #require(
            try await store.claimNextQueuedSend(worker: "a", leaseUntil: context.clock.now().addingTimeInterval(30)))
        #expect(claimed.id == send.id && claimed.status == .running && claimed.worker == "a")

        // Worker a sends the first page, records it with its checkpoint, then dies.
        let first = try await store.devices(matching: .topic(topic), after: claimed.checkpoint, limit: 12)
        let outcomes = first.devices.map {
            outcome(0, .accepted(apnsID: APNSID()), at: context.clock.now()).with(token: $0.token)
        }
        _ = try await store.recordOutcomes(outcomes, for: send.id, checkpoint: first.next)

        context.clock.advance(by: .seconds(31))
        try await context.withSecondInstance { other in
            let resumed = try #require(
                try await other.claimNextQueuedSend(worker: "b", leaseUntil: context.clock.now().addingTimeInterval(30))
            )
            #expect(resumed.id == send.id && resumed.worker == "b")
            #expect(resumed.counts.accepted == 12)
            let checkpoint = try #require(resumed.checkpoint)
            #expect(checkpoint == first.next)
            let rest = try await all(other, .topic(topic)).filter { $0.token > checkpoint.token }
            let resumedPage = try await other.devices(matching: .topic(topic), after: checkpoint, limit: 100)
            #expect(
                resumedPage.devices == rest && rest.count == 18, "the resumed walk starts right after the checkpoint")
            #expect(
                try await !store.renewLease(
                    of: send.id, worker: "a", until: context.clock.now().addingTimeInterval(60)),
                "the dead worker's lease is gone")
            #expect(
                try await other.renewLease(of: send.id, worker: "b", until: context.clock.now().addingTimeInterval(60)))
        }
    }

    static func priorityClaims(_ context: Context) async throws {
        let store = context.store
        var sends: [String: SendID] = [:]
        // Queued oldest first: low, normal (twice), high; and an app's send stored without its app (older Herald).
        for (name, topic) in [
            ("low", "com.low.app"), ("normal-1", "com.normal.app"), ("unknown", nil), ("normal-2", "com.normal.app"),
            ("high", "com.high.app"),
        ] {
            sends[name] =
                try await store.createSend(
                    NewSend(target: name, summary: "s", lane: .campaign, topic: topic)
                ).id
            context.clock.advance(by: .seconds(1))
        }
        let precedence = ClaimPrecedence(priorities: [
            "com.low.app": .low, "com.high.app": .high, "com.normal.app": .normal,
        ])
        let lease = context.clock.now().addingTimeInterval(30)
        var order: [SendID] = []
        while let claimed = try await store.claimNextQueuedSend(
            worker: "w", leaseUntil: lease, lanes: [.campaign], excluding: [], precedence: precedence)
        {
            order.append(claimed.id)
        }
        #expect(order == ["high", "normal-1", "unknown", "normal-2", "low"].map { sends[$0]! })

        // Priority ranks sends within their lane only: a high app's campaign waits for a normal app's activity send.
        let campaign = try await store.createSend(
            NewSend(target: "high campaign", summary: "s", lane: .campaign, topic: "com.high.app"))
        context.clock.advance(by: .seconds(1))
        let activity = try await store.createSend(
            NewSend(target: "normal activity", summary: "s", lane: .activity, topic: "com.normal.app"))
        var acrossLanes: [SendID] = []
        while let claimed = try await store.claimNextQueuedSend(
            worker: "w", leaseUntil: lease, lanes: [.campaign, .activity], excluding: [], precedence: precedence)
        {
            acrossLanes.append(claimed.id)
        }
        #expect(acrossLanes == [activity.id, campaign.id])
    }

    static func laneClaims(_ context: Context) async throws {
        let store = context.store
        let campaign = try await store.createSend(NewSend(target: "every device", summary: "s", lane: .campaign))
        context.clock.advance(by: .seconds(1))
        let user = try await store.createSend(NewSend(target: "user 1", summary: "s", lane: .background))
        context.clock.advance(by: .seconds(1))
        let activity = try await store.createSend(NewSend(target: "activity a", summary: "s", lane: .activity))
        let later = try await store.createSend(
            NewSend(
                target: "user 2", summary: "scheduled", sendAt: context.clock.now().addingTimeInterval(60),
                lane: .background))
        _ = try await store.recordFinishedSend(
            NewSend(target: "user 3", summary: "inline", status: .completed), outcomes: [])
        let stored = try await store.send(user.id)
        #expect(campaign.lane == .campaign && stored?.lane == .background)
        #expect(try await store.waitingSends().mapValues(\.count) == [.campaign: 1, .background: 1, .activity: 1], "not the scheduled one")

        let lease = context.clock.now().addingTimeInterval(30)
        #expect(try await store.claimNextQueuedSend(worker: "w", leaseUntil: lease, lanes: []) == nil)
        let first = try await store.claimNextQueuedSend(worker: "w", leaseUntil: lease, lanes: [.background, .activity])
        #expect(
            first?.id == activity.id && first?.lane == .activity,
            "the first lane asked for in SendLane.priorityOrder, though the background send is older")
        let second = try await store.claimNextQueuedSend(worker: "w", leaseUntil: lease, lanes: [.background, .activity])
        #expect(second?.id == user.id && second?.lane == .background, "then the next lane")
        #expect(
            try await store.claimNextQueuedSend(worker: "w", leaseUntil: lease, lanes: [.background]) == nil,
            "the scheduled send of that lane is not due")
        #expect(try await store.waitingSends().mapValues(\.count) == [.campaign: 1])
        #expect(try await store.claimNextQueuedSend(worker: "w", leaseUntil: lease)?.id == campaign.id, "every lane")
        #expect(try await store.waitingSends().isEmpty)
        let inline = try await store.recentSends(after: nil, limit: 10).sends.first { $0.summary == "inline" }
        #expect(inline?.lane == .inline, "a send recorded finished waited in no lane")
        context.clock.advance(by: .seconds(120))
        #expect(
            try await store.waitingSends().mapValues(\.count) == [.background: 2, .activity: 1, .campaign: 1],
            "the scheduled send came due, and the leases of the claimed ones ran out")
        // A send waits since it came due, or since its worker's lease ran out: the earlier of the two here.
        #expect(try await store.waitingSends()[.background]?.oldest == lease)
        #expect(later.sendAt.map { $0 > lease } == true)
        // A worker leaves out the sends it runs itself, however run out their leases look (a wall clock that jumped):
        // a second run under its name would pass the checks that fence the first.
        let ownRuns: Set<SendID> = [campaign.id, user.id, activity.id]
        let renewed = context.clock.now().addingTimeInterval(30)
        let claimed = try await store.claimNextQueuedSend(
            worker: "w", leaseUntil: renewed, lanes: Set(SendLane.priorityOrder), excluding: ownRuns, precedence: .none)
        #expect(claimed?.id == later.id, "the oldest waiting send the worker does not run")
        #expect(
            try await store.claimNextQueuedSend(
                worker: "w", leaseUntil: renewed, lanes: Set(SendLane.priorityOrder), excluding: ownRuns, precedence: .none) == nil)
        #expect(
            try await store.claimNextQueuedSend(worker: "w", leaseUntil: renewed)?.id == activity.id,
            "without the exclusion, a send whose lease ran out is taken again: the first lane's")
    }

    static func claims(_ context: Context) async throws {
        let store = context.store
        #expect(
            try await store.claimNextQueuedSend(worker: "a", leaseUntil: context.clock.now()) == nil, "nothing waits")
        let older = try await store.createSend(NewSend(target: "t1", summary: "first"))
        context.clock.advance(by: .seconds(1))
        let newer = try await store.createSend(NewSend(target: "t2", summary: "second"))
        _ = try await store.createSend(NewSend(target: "t3", summary: "inline", status: .running))
        let lease = context.clock.now().addingTimeInterval(30)

        let a = try await store.claimNextQueuedSend(worker: "a", leaseUntil: lease)
        let b = try await store.claimNextQueuedSend(worker: "b", leaseUntil: lease)
        #expect(a?.id == older.id && b?.id == newer.id, "oldest first, never the same send")
        #expect(a?.leaseUntil == lease && b?.worker == "b")
        #expect(
            try await store.claimNextQueuedSend(worker: "c", leaseUntil: lease) == nil,
            "running sends stay with their worker")

        #expect(try await store.renewLease(of: older.id, worker: "a", until: lease.addingTimeInterval(60)))
        context.clock.advance(by: .seconds(45))
        let stolen = try await store.claimNextQueuedSend(
            worker: "c", leaseUntil: context.clock.now().addingTimeInterval(30))
        #expect(stolen?.id == newer.id, "b's lease ran out; a renewed its lease")
        #expect(
            try await !store.renewLease(of: newer.id, worker: "b", until: context.clock.now().addingTimeInterval(30)))

        let finished = try await store.updateSend(older.id, SendUpdate(status: .completed))
        #expect(finished.worker == nil && finished.leaseUntil == nil, "a final status releases the lease")
        context.clock.advance(by: .seconds(3_600))
        let last = try await store.claimNextQueuedSend(
            worker: "d", leaseUntil: context.clock.now().addingTimeInterval(30))
        #expect(last?.id == newer.id, "c's lease ran out too")
        #expect(
            try await store.claimNextQueuedSend(worker: "e", leaseUntil: context.clock.now()) == nil,
            "completed sends, and running sends without a lease (performed inline by their creator), are never claimed")
    }

    static func concurrentClaims(_ context: Context) async throws {
        let store = context.store
        for n in 0..<12 { _ = try await store.createSend(NewSend(target: "t\(n)", summary: "s")) }
        let lease = context.clock.now().addingTimeInterval(300)
        let claimed = try await context.withSecondInstance { other in
            try await withThrowingTaskGroup(of: [SendID].self) { group in
                for (index, instance) in [store, other, store, other].enumerated() {
                    group.addTask {
                        var mine: [SendID] = []
                        while let send = try await instance.claimNextQueuedSend(worker: "w\(index)", leaseUntil: lease)
                        {
                            mine.append(send.id)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        #expect(claimed.count == 12 && Set(claimed).count == 12, "each send claimed exactly once")
    }
}

extension StoreConformance {
    static func restartedInstance(_ context: Context) async throws {
        let store = context.store
        // Leases far beyond anything the case does: only the instance lock can put these sends back.
        let lease = context.clock.now().addingTimeInterval(3_600)
        let earlier = try await store.createSend(NewSend(target: "t1", summary: "held by the killed run"))
        context.clock.advance(by: .seconds(1))
        let current = try await store.createSend(NewSend(target: "t2", summary: "held by the running worker"))
        context.clock.advance(by: .seconds(1))
        let waiting = try await store.createSend(NewSend(target: "t3", summary: "queued"))
        #expect(try await store.claimNextQueuedSend(worker: "alpha/101/dead", leaseUntil: lease)?.id == earlier.id)
        #expect(try await store.claimNextQueuedSend(worker: "alpha/202/live", leaseUntil: lease)?.id == current.id)

        let requeued = try await store.withInstanceLock("alpha") { lock in
            #expect(lock.isHeld && lock.instance == "alpha")
            #expect(try await lock.acquire(), "a held lock stays held")
            return try await store.requeueAbandonedSends(of: lock, keeping: "alpha/202/live")
        }
        #expect(requeued == [earlier.id])
        let putBack = try #require(try await store.send(earlier.id))
        #expect(putBack.status == .queued && putBack.worker == nil && putBack.leaseUntil == nil)
        let kept = try #require(try await store.send(current.id))
        #expect(kept.status == .running && kept.worker == "alpha/202/live", "the running worker keeps its send")
        #expect(
            try await store.claimNextQueuedSend(worker: "alpha/202/live", leaseUntil: lease)?.id == earlier.id,
            "the put-back send is claimed before its lease would have run out, oldest first")
        #expect(try await store.claimNextQueuedSend(worker: "alpha/202/live", leaseUntil: lease)?.id == waiting.id)
    }

    static func instanceLockExclusive(_ context: Context) async throws {
        let store = context.store
        let send = try await store.createSend(NewSend(target: "t1", summary: "held by a run of alpha"))
        _ = try #require(
            try await store.claimNextQueuedSend(
                worker: "alpha/101/run", leaseUntil: context.clock.now().addingTimeInterval(3_600)))
        let (release, releasing) = AsyncStream.makeStream(of: Void.self)
        let (taken, taking) = AsyncStream.makeStream(of: Bool.self)
        let (released, releasedNow) = AsyncStream.makeStream(of: Void.self)
        try await context.withSecondInstance { other in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await store.withInstanceLock("alpha") { lock in
                        taking.yield(lock.isHeld)
                        for await _ in release {}
                    }
                    releasedNow.yield()
                }
                var iterator = taken.makeAsyncIterator()
                #expect(await iterator.next() == true, "the first process takes the lock")
                let putBack = try await other.withInstanceLock("alpha") { lock in
                    #expect(!lock.isHeld, "another process holds it")
                    #expect(try await !lock.acquire())
                    #expect(
                        try await other.requeueAbandonedSends(of: lock, keeping: "alpha/303/new").isEmpty,
                        "without the lock nothing is put back: the holder may be the live worker")
                    #expect(try await other.send(send.id)?.status == .running)

                    releasing.finish()
                    for await _ in released { break }
                    #expect(try await lock.acquire(), "taken once the first process lets go")
                    return try await other.requeueAbandonedSends(of: lock, keeping: "alpha/303/new")
                }
                #expect(putBack == [send.id])
                try await group.waitForAll()
            }
        }
    }
}

extension DeliveryOutcome {
    fileprivate func with(token: DeviceToken) -> DeliveryOutcome {
        DeliveryOutcome(token: token, environment: environment, result: result, at: at, action: action)
    }
}
