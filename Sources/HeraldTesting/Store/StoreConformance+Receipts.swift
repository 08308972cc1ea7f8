import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var receiptCases: [Case] {
        [
            Case(
                "receipts count once per device, kind and action, only for devices APNs accepted the send for, and imply received",
                receipts),
            Case("two instances recording the same receipts at once count them once", concurrentReceipts),
            Case(
                "a cancelled send is never claimed or resumed, keeps its counts, and its worker can still record what was in flight",
                cancellation),
        ]
    }

    /// A send with three outcomes: devices 1 and 2 accepted (their apns-ids returned), device 3 rejected.
    private static func deliveredSend(_ context: Context) async throws -> (SendRecord, APNSID, APNSID) {
        let store = context.store
        let send = try await store.createSend(NewSend(target: "user 1", summary: "alert", status: .running))
        let (first, second) = (APNSID(), APNSID())
        let now = context.clock.now()
        _ = try await store.recordOutcomes(
            [
                outcome(1, .accepted(apnsID: first), at: now), outcome(2, .accepted(apnsID: second), at: now),
                outcome(3, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed),
            ], for: send.id, checkpoint: nil)
        return (send, first, second)
    }

    static func receipts(_ context: Context) async throws {
        let store = context.store
        let (send, first, second) = try await deliveredSend(context)
        let at = context.clock.now().addingTimeInterval(5)
        let batch: [ReceiptEvent] = [
            ReceiptEvent(kind: .received, token: token(1), sendID: send.id, at: at),
            ReceiptEvent(kind: .opened, token: token(1), sendID: send.id, apnsID: first, at: at),
            ReceiptEvent(kind: .received, token: token(1), sendID: send.id, at: at),
            ReceiptEvent(kind: .received, token: token(3), sendID: send.id, at: at),
            ReceiptEvent(kind: .received, token: token(9), sendID: send.id, at: at),
            ReceiptEvent(kind: .opened, token: token(2), sendID: nil, apnsID: second, at: at),
            ReceiptEvent(kind: .action, token: token(2), sendID: send.id, apnsID: second, action: "accept", at: at),
            ReceiptEvent(kind: .action, token: token(2), sendID: send.id, action: "snooze", at: at),
            ReceiptEvent(kind: .received, token: token(1), sendID: send.id, apnsID: second, at: at),
            ReceiptEvent(kind: .dismissed, token: token(2), sendID: SendID(), at: at),
        ]
        let results = try await store.recordReceipts(batch)
        #expect(
            results == [
                .recorded, .recorded, .duplicate, .unknownDelivery, .unknownDelivery, .recorded, .recorded, .recorded,
                .unknownDelivery, .unknownDelivery,
            ],
            "rejected and unknown devices, another device's apns-id and unknown sends count nothing")
        let counts = ReceiptCounts(received: 2, opened: 2, actions: 2, dismissed: 0)
        #expect(try await store.receiptCounts(of: send.id) == counts, "opening implies receiving: device 2 counts")

        let again = try await store.recordReceipts(batch)
        #expect(again.allSatisfy { $0 != .recorded }, "the same events again are duplicates: \(again)")
        #expect(try await store.receiptCounts(of: send.id) == counts)
        #expect(try await store.recordReceipts([]).isEmpty)
        #expect(try await store.receiptCounts(of: SendID()) == ReceiptCounts())
        let statistics = try await store.sendStatistics(since: context.clock.now().addingTimeInterval(-60), reasons: 3)
        #expect(statistics.receipts == counts && statistics.counts.accepted == 2)
    }

    static func concurrentReceipts(_ context: Context) async throws {
        let store = context.store
        let (send, _, _) = try await deliveredSend(context)
        let at = context.clock.now()
        let events = [1, 2].flatMap { n in
            [ReceiptEvent.Kind.received, .opened].map { ReceiptEvent(kind: $0, token: token(n), sendID: send.id, at: at) }
        }
        var random = TestSeed.generator(for: "conformance: concurrent receipts")
        let orders = (0..<4).map { _ in events.shuffled(using: &random) }
        let results = try await context.withSecondInstance { other in
            try await withThrowingTaskGroup(of: [ReceiptResult].self) { group in
                for (instance, order) in zip([store, other, store, other], orders) {
                    group.addTask { try await instance.recordReceipts(order) }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        #expect(results.filter { $0 == .recorded }.count == 4, "each of the four events recorded once: \(results)")
        #expect(try await store.receiptCounts(of: send.id) == ReceiptCounts(received: 2, opened: 2))
    }

    static func cancellation(_ context: Context) async throws {
        let store = context.store
        let clock = context.clock
        #expect(try await store.cancelSend(SendID()) == nil, "an unknown send")

        let queued = try await store.createSend(NewSend(target: "t1", summary: "queued"))
        clock.advance(by: .seconds(1))
        let running = try await store.createSend(NewSend(target: "t2", summary: "running"))
        let lease = clock.now().addingTimeInterval(30)
        #expect(try await store.claimNextQueuedSend(worker: "a/1/old", leaseUntil: lease)?.id == queued.id)
        #expect(try await store.claimNextQueuedSend(worker: "b/1/old", leaseUntil: lease)?.id == running.id)
        _ = try await store.updateSend(queued.id, SendUpdate(status: .queued))
        _ = try await store.recordOutcomes(
            (1...2).map { outcome($0, .accepted(apnsID: APNSID()), at: clock.now()) }, for: running.id, checkpoint: nil)

        clock.advance(by: .seconds(1))
        let cancelledQueued = try #require(try await store.cancelSend(queued.id))
        #expect(cancelledQueued.status == .cancelled && cancelledQueued.updatedAt == clock.now())
        #expect(cancelledQueued.message?.contains("nothing was sent") == true, "\(cancelledQueued.message ?? "")")
        let cancelledRunning = try #require(try await store.cancelSend(running.id))
        #expect(cancelledRunning.status == .cancelled && cancelledRunning.counts.accepted == 2)
        #expect(cancelledRunning.worker == "b/1/old", "the worker keeps the send to record what it has in flight")

        // The worker has not noticed yet: it renews, records its in-flight outcome, then ends as it would have.
        #expect(try await store.renewLease(of: running.id, worker: "b/1/old", until: clock.now().addingTimeInterval(30)))
        let counts = try await store.recordOutcomes(
            [outcome(3, .accepted(apnsID: APNSID()), at: clock.now())], for: running.id, checkpoint: nil)
        #expect(counts.accepted == 3)
        let ended = try await store.updateSend(running.id, SendUpdate(status: .completed, message: "done"))
        #expect(ended.status == .cancelled && ended.message == cancelledRunning.message, "cancelled stays cancelled")
        #expect(ended.worker == nil && ended.leaseUntil == nil, "the lease is released")
        let paused = try await store.updateSend(queued.id, SendUpdate(status: .queued, message: "paused"))
        #expect(paused.status == .cancelled, "a shutdown's pause does not put it back in the queue")

        clock.advance(by: .seconds(3_600))
        #expect(
            try await store.claimNextQueuedSend(worker: "c", leaseUntil: clock.now().addingTimeInterval(30)) == nil,
            "cancelled sends are never claimed, whatever their lease")
        let requeued = try await store.withInstanceLock("b") { lock in
            try await store.requeueAbandonedSends(of: lock, keeping: "b/2/new")
        }
        #expect(requeued.isEmpty, "nor put back in the queue at a restart")
        #expect(try await !store.renewLease(of: running.id, worker: "b/1/old", until: clock.now()), "its lease was released")

        let again = try #require(try await store.cancelSend(running.id))
        #expect(again.status == .cancelled && again.updatedAt == ended.updatedAt, "cancelling twice changes nothing")
        let inline = try await store.recordFinishedSend(
            NewSend(target: "user 4", summary: "inline", status: .completed), outcomes: [])
        #expect(try await store.cancelSend(inline.id)?.status == .completed, "an ended send stays as it ended")
        #expect(try await store.send(running.id)?.counts.accepted == 3)
    }

    /// Migrates a fresh database to version 6, fills it as Herald did then (a completed send with outcomes, a running
    /// one with a lease), applies the rest, and checks that nothing was lost and the sends can be cancelled: version 7
    /// swaps the sends' status column, which must not touch their outcomes (on SQLite a table rebuild would
    /// cascade-delete them).
    public static func checkUpgradeToReceipts(on fixture: StoreFixture) async throws {
        try await withUnmigrated(fixture) { store, upgradable, clock in
            try await upgradable.migrate(through: 6)
            #expect(try await store.health().schemaVersion == 6)
            // Rows as schema 6 had them, written as they are: today's statements name later columns.
            let (done, running) = (SendID(), SendID())
            let at = StoreTime.microseconds(clock.now())
            let lease = at + 60_000_000
            let checkpoint = "production:" + token(2).hex
            try await upgradable.executeRaw([
                """
                INSERT INTO sends (id, created_at, updated_at, target, summary, job, status, target_count, \
                accepted, rejected, failed, checkpoint, worker, lease_until, message) VALUES \
                ('\(done)', \(at), \(at), 'user 1', 'done', NULL, 'completed', 2, 2, 0, 0, '\(checkpoint)', NULL, \
                NULL, NULL), \
                ('\(running)', \(at), \(at), 'user 2', 'running', '{}', 'running', NULL, 0, 0, 1, NULL, 'v', \
                \(lease), NULL)
                """,
                """
                INSERT INTO send_outcomes (send_id, seq, token, environment, outcome, apns_id, status, reason, \
                apns_timestamp, message, at, action) VALUES \
                ('\(done)', 1, '\(token(1).hex)', 'production', 'accepted', '\(APNSID())', NULL, NULL, NULL, NULL, \
                \(at), NULL), \
                ('\(done)', 2, '\(token(2).hex)', 'development', 'accepted', '\(APNSID())', NULL, NULL, NULL, NULL, \
                \(at), NULL), \
                ('\(running)', 1, '\(token(3).hex)', 'production', 'failed', NULL, NULL, NULL, NULL, 'reset', \(at), NULL)
                """,
                """
                INSERT INTO devices (token, topic, environment, token_kind, user_id, tags, registered_at, \
                created_at, updated_at) VALUES ('\(token(4).hex)', '\(topic)', 'development', 'device', 'u', \
                '["beta"]', \(at), \(at), \(at))
                """,
                "INSERT INTO device_tags (tag, token) VALUES ('beta', '\(token(4).hex)')",
            ])

            try await store.migrate()
            #expect(try await store.health().schemaVersion == StoreSchema.latestVersion)
            let completed = try #require(try await store.send(done))
            #expect(completed.status == .completed && completed.targetCount == 2 && completed.counts.accepted == 2)
            #expect(completed.checkpoint == DeviceCursor(checkpoint) && completed.sendAt == nil)
            let held = try #require(try await store.send(running))
            #expect(held.status == .running && held.worker == "v" && held.counts.failed == 1 && held.job == "{}")
            #expect(try await store.outcomes(of: done, after: nil, limit: 10).outcomes.count == 2)
            #expect(try await store.outcomes(of: running, after: nil, limit: 10).outcomes.count == 1)
            #expect(try await store.cancelSend(running)?.status == .cancelled)
            #expect(try await store.cancelSend(done)?.status == .completed)
            #expect(
                try await store.claimNextQueuedSend(worker: "x", leaseUntil: clock.now().addingTimeInterval(60))
                    == nil)

            let device = try #require(try await store.device(token(4)))
            #expect(device.userID == "u" && device.tags == ["beta"] && device.registration.timeZone == nil)
            // The registration statement of the latest schema (PostgreSQL: herald_register, replaced by 8).
            var again = device.registration
            again.timeZone = "Asia/Tokyo"
            #expect(try await store.upsert(again).registration.registration == again)
            #expect(
                try await store.devices(matching: .tag("beta"), after: nil, limit: 10).devices.map(\.token)
                    == [token(4)], "the tag rows of the old registration are still there")
        }
    }

    /// Runs `body` with a store on a fresh database that is running but not migrated, as an upgrade test needs it
    /// (the store, its ``VersionedMigrations``, its clock), then cleans the database up.
    static func withUnmigrated(
        _ fixture: StoreFixture,
        _ body: (any Store, any VersionedMigrations, ManualWallClock) async throws -> Void
    ) async throws {
        let clock = ManualWallClock()
        do {
            let store = try fixture.open(clock)
            let upgradable = try #require(store as? any VersionedMigrations)
            try await withRunning(store, migrate: false) { store in try await body(store, upgradable, clock) }
        } catch {
            await fixture.cleanup()
            throw error
        }
        await fixture.cleanup()
    }
}
