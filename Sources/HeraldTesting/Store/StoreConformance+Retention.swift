public import Foundation
import HeraldCore
public import HeraldStore
public import Testing

extension StoreConformance {
    static var retentionCases: [Case] {
        [
            Case(
                "retention deletes the outcomes and receipt events of sends finished before the cutoff, a batch at a time; queued, running and younger sends keep theirs; counts stay",
                retentionOfOutcomes),
            Case(
                "retention deletes a finished send once its outcomes and receipt events are gone, with its shards and receipt counts; unfinished and younger sends stay",
                retentionOfSends),
            Case(
                "retention deletes console sessions last used, sign-in links expired, and tokens invalidated before the cutoff; a token registered again stays",
                retentionOfSessionsAndTokens),
            Case("two instances running retention at once delete every old row once", concurrentRetention),
        ]
    }

    private static let day: TimeInterval = 86_400

    /// A send finished now with `devices` outcomes (device numbers from `first`), every one accepted.
    private static func finishedSend(
        _ context: Context, devices: Int, first: Int = 1, status: SendStatus = .completed
    ) async throws -> SendRecord {
        let store = context.store
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        let now = context.clock.now()
        if devices > 0 {
            _ = try await store.recordOutcomes(
                (first..<first + devices).map { outcome($0, .accepted(apnsID: APNSID()), at: now) }, for: send.id,
                checkpoint: nil)
        }
        return try await store.updateSend(send.id, SendUpdate(status: status))
    }

    /// Runs batches of a kind until one says it is finished; returns the rows deleted and the batches run.
    @discardableResult
    public static func deleteAll(
        _ kind: RetentionKind, before cutoff: Date, limit: Int, on store: any Store,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (deleted: Int, batches: Int) {
        var (deleted, batches) = (0, 0)
        while true {
            let batch = try await store.deleteExpired(kind, before: cutoff, limit: limit)
            #expect(batch.deleted <= limit, "a batch deletes at most its limit", sourceLocation: sourceLocation)
            deleted += batch.deleted
            batches += 1
            if batch.finished { return (deleted, batches) }
            try #require(batches < 1_000, "retention ends", sourceLocation: sourceLocation)
        }
    }

    static func retentionOfOutcomes(_ context: Context) async throws {
        let store = context.store
        let old = try await finishedSend(context, devices: 5)
        let third = try #require(
            try await store.outcomes(of: old.id, after: nil, limit: 10).outcomes.first { $0.token == token(3) })
        guard case .accepted(let oldAPNSID) = third.result else { throw StoreError(.notFound, "no apns-id") }
        let cancelled = try await finishedSend(context, devices: 2, first: 10, status: .cancelled)
        let inline = try await store.recordFinishedSend(
            NewSend(target: "token", summary: "alert", status: .completed),
            outcomes: [outcome(20, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: context.clock.now())])
        let empty = try await finishedSend(context, devices: 0, status: .failed)
        let running = try await store.createSend(NewSend(target: "topic", summary: "campaign", status: .running))
        _ = try await store.recordOutcomes(
            [outcome(30, .accepted(apnsID: APNSID()), at: context.clock.now())], for: running.id, checkpoint: nil)
        let queued = try await store.createSend(NewSend(target: "topic", summary: "later", status: .queued))
        let receipts = try await store.recordReceipts([
            ReceiptEvent(kind: .opened, token: token(1), sendID: old.id, at: context.clock.now()),
            ReceiptEvent(kind: .received, token: token(2), sendID: old.id, at: context.clock.now()),
        ])
        #expect(receipts == [.recorded, .recorded])
        let oldReceipts = try await store.receiptCounts(of: old.id)

        context.clock.advance(by: .seconds(10 * day))
        let young = try await finishedSend(context, devices: 3, first: 40)
        _ = try await store.recordReceipts([
            ReceiptEvent(kind: .received, token: token(40), sendID: young.id, at: context.clock.now())
        ])
        let cutoff = context.clock.now().addingTimeInterval(-5 * day)

        #expect(try await deleteAll(.receiptEvents, before: cutoff, limit: 100, on: store).deleted == 3,
            "opened, the received it implies, and received")
        #expect(try await store.receiptCounts(of: old.id) == oldReceipts, "a send keeps its receipt counts")
        let late = try await store.recordReceipts([
            ReceiptEvent(kind: .opened, token: token(2), sendID: old.id, at: context.clock.now()),
            ReceiptEvent(kind: .opened, token: token(3), sendID: nil, apnsID: oldAPNSID, at: context.clock.now()),
            ReceiptEvent(kind: .opened, token: token(40), sendID: young.id, at: context.clock.now()),
        ])
        #expect(
            late == [.unknownDelivery, .unknownDelivery, .recorded],
            "reports about a send whose events are deleted are not counted again")
        #expect(try await store.receiptCounts(of: old.id) == oldReceipts)
        #expect(try await store.outcomes(of: old.id, after: nil, limit: 10).outcomes.count == 5, "outcomes apart")

        let outcomes = try await deleteAll(.outcomes, before: cutoff, limit: 2, on: store)
        #expect(outcomes.deleted == 5 + 2 + 1, "the old finished sends' outcomes, whatever their status")
        #expect(outcomes.batches >= 4, "in batches of at most 2")
        for send in [old, cancelled, inline, empty] {
            #expect(try await store.outcomes(of: send.id, after: nil, limit: 10).outcomes.isEmpty)
        }
        #expect(try await store.send(old.id)?.counts == old.counts, "a send keeps its counts")
        #expect(try await store.send(inline.id)?.counts.rejected == 1)
        #expect(try await store.outcomes(of: running.id, after: nil, limit: 10).outcomes.count == 1, "still running")
        #expect(try await store.send(queued.id)?.status == .queued)
        #expect(try await store.outcomes(of: young.id, after: nil, limit: 10).outcomes.count == 3, "too young")
        #expect(try await deleteAll(.outcomes, before: cutoff, limit: 2, on: store).deleted == 0, "nothing left")

        // The running send finishes; once it is old, its outcome goes too.
        _ = try await store.updateSend(running.id, SendUpdate(status: .completed))
        context.clock.advance(by: .seconds(10 * day))
        let later = context.clock.now().addingTimeInterval(-5 * day)
        #expect(try await deleteAll(.outcomes, before: later, limit: 100, on: store).deleted == 1 + 3)
        #expect(try await store.send(running.id)?.counts.accepted == 1)
    }

    static func retentionOfSends(_ context: Context) async throws {
        let store = context.store
        let old = try await finishedSend(context, devices: 3)
        _ = try await store.recordReceipts([
            ReceiptEvent(kind: .received, token: token(1), sendID: old.id, at: context.clock.now())
        ])
        let sharded = try await store.createSend(
            NewSend(target: "topic", summary: "campaign", status: .queued, targetCount: 4, lane: .campaign))
        let claimed = try #require(
            try await store.claimNextQueuedSend(
                worker: "w", leaseUntil: context.clock.now().addingTimeInterval(60), lanes: [.campaign]))
        #expect(claimed.id == sharded.id)
        _ = try await store.shardSend(
            sharded.id, worker: "w", boundaries: [DeviceCursor(environment: .production, token: token(2))], size: 2,
            targetCount: 4)
        _ = try await store.updateSend(sharded.id, SendUpdate(status: .completed))
        let running = try await store.createSend(NewSend(target: "topic", summary: "campaign", status: .running))
        let queued = try await store.createSend(NewSend(target: "topic", summary: "later", status: .queued))

        context.clock.advance(by: .seconds(100 * day))
        let young = try await finishedSend(context, devices: 1, first: 50)
        let cutoff = context.clock.now().addingTimeInterval(-90 * day)

        #expect(try await deleteAll(.sends, before: cutoff, limit: 10, on: store).deleted == 0,
            "a send whose outcomes and events are kept stays")
        try await deleteAll(.outcomes, before: cutoff, limit: 10, on: store)
        #expect(try await deleteAll(.sends, before: cutoff, limit: 10, on: store).deleted == 0,
            "a send whose receipt events are kept stays")
        try await deleteAll(.receiptEvents, before: cutoff, limit: 10, on: store)
        #expect(try await deleteAll(.sends, before: cutoff, limit: 1, on: store).deleted == 2)
        #expect(try await store.send(old.id) == nil)
        #expect(try await store.send(sharded.id) == nil)
        #expect(try await store.shards(of: sharded.id).isEmpty, "its shards went with it")
        #expect(try await store.receiptCounts(of: old.id) == ReceiptCounts(), "and its receipt counts")
        #expect(try await store.send(running.id)?.status == .running, "never finished: kept")
        #expect(try await store.send(queued.id)?.status == .queued)
        #expect(try await store.send(young.id) != nil)
        #expect(try await store.outcomes(of: young.id, after: nil, limit: 10).outcomes.count == 1)
    }

    static func retentionOfSessionsAndTokens(_ context: Context) async throws {
        let store = context.store
        let start = context.clock.now()
        for n in 1...3 {
            try await store.createConsoleSession(
                ConsoleSession(idHash: "old\(n)", csrfToken: "c", apiKey: nil, createdAt: start, lastSeenAt: start))
        }
        try await store.createSignInLink(tokenHash: "expired", expiresAt: start.addingTimeInterval(3600))
        for n in 1...4 { _ = try await store.upsert(registration(n)) }
        _ = try await store.invalidate(token: token(1), reason: .unregistered, at: nil)
        _ = try await store.invalidate(token: token(2), reason: .expiredToken, at: nil)

        context.clock.advance(by: .seconds(40 * day))
        let now = context.clock.now()
        try await store.createConsoleSession(
            ConsoleSession(idHash: "young", csrfToken: "c", apiKey: nil, createdAt: start, lastSeenAt: now))
        try await store.createSignInLink(tokenHash: "fresh", expiresAt: now.addingTimeInterval(3600))
        _ = try await store.invalidate(token: token(3), reason: .unregistered, at: nil)
        _ = try await store.upsert(registration(2))
        let cutoff = now.addingTimeInterval(-30 * day)

        #expect(try await deleteAll(.consoleSessions, before: cutoff, limit: 2, on: store).deleted == 3 + 1)
        #expect(try await store.consoleSession(idHash: "old1") == nil)
        #expect(try await store.consoleSession(idHash: "young") != nil)
        #expect(try await store.consumeSignInLink(tokenHash: "fresh", at: now))
        #expect(try await !store.consumeSignInLink(tokenHash: "expired", at: start))

        #expect(try await deleteAll(.invalidatedTokens, before: cutoff, limit: 10, on: store).deleted == 1)
        #expect(try await store.device(token(1)) == nil)
        #expect(try await store.device(token(2))?.isActive == true, "registered again: kept")
        #expect(try await store.device(token(3))?.invalidation != nil, "invalidated too recently: kept")
        #expect(try await store.device(token(4))?.isActive == true)
    }

    static func concurrentRetention(_ context: Context) async throws {
        let store = context.store
        var sends: [SendID] = []
        for index in 0..<6 { sends.append(try await finishedSend(context, devices: 7, first: 100 * index + 1).id) }
        for n in 1...30 { _ = try await store.upsert(registration(10_000 + n)) }
        for n in 1...30 { _ = try await store.invalidate(token: token(10_000 + n), reason: .unregistered, at: nil) }
        context.clock.advance(by: .seconds(2 * day))
        let cutoff = context.clock.now().addingTimeInterval(-day)
        let totals = try await context.withSecondInstance { other in
            try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for instance in [store, other] {
                    group.addTask {
                        // Each instance's run goes on until a batch says nothing is left for it.
                        async let outcomes = deleteAll(.outcomes, before: cutoff, limit: 5, on: instance).deleted
                        async let tokens = deleteAll(.invalidatedTokens, before: cutoff, limit: 4, on: instance)
                            .deleted
                        return (try await outcomes, try await tokens)
                    }
                }
                return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
            }
        }
        // An instance that found the other deleting stopped early: a last run picks up whatever it left.
        let rest = try await deleteAll(.outcomes, before: cutoff, limit: 100, on: store).deleted
        let restTokens = try await deleteAll(.invalidatedTokens, before: cutoff, limit: 100, on: store).deleted
        #expect(totals.0 + rest == 6 * 7, "every outcome deleted once")
        #expect(totals.1 + restTokens == 30, "every invalidated token deleted once")
        for id in sends { #expect(try await store.outcomes(of: id, after: nil, limit: 10).outcomes.isEmpty) }
        #expect(try await store.count(matching: .topic(topic).includingInvalidated()) == 0)
    }
}
