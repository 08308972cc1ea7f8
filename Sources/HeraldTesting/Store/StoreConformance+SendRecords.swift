import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Send records (migration 30, docs/storage.md "Send records"): first-try acceptances under the derived apns-id are
/// kept a batch per recording, environment and token length; every other outcome a row. Each reader answers from both.
extension StoreConformance {
    static var sendRecordCases: [Case] {
        [
            Case(
                "first-try acceptances are kept as a batch per recording and environment, the rest a row each: pages list rows then batches in sequence, a page that ends inside a batch goes on inside it, counts and groups add both",
                batchedPages),
            Case(
                "a device in a batch is found by every reader: its trace, its deliveries, receipts by send and by apns-id, the devices a send has done; one outside it, or matched across two of its neighbours, is not",
                batchedReaders),
            Case(
                "a recording leaves out the devices the send has, in its batches or its rows, however they ended; batches whose ranges overlap hold each device once",
                batchedRepeats),
            Case(
                "retention deletes a finished send's batches with its rows, and its receipts stop counting; a running send keeps them",
                batchedRetention),
        ]
    }

    /// A first-try acceptance of a send, which a batch holds.
    private static func firstTry(_ n: Int, of send: SendID, at date: Date) -> DeliveryOutcome {
        outcome(n, .accepted(apnsID: APNSID.derived(send: send, token: token(n))), at: date)
    }

    /// Every outcome of a send, page by page.
    private static func allOutcomes(of send: SendID, pageSize: Int, in store: any Store) async throws
        -> [DeliveryOutcome]
    {
        var (all, cursor) = ([DeliveryOutcome](), OutcomeCursor?.none)
        repeat {
            let page = try await store.outcomes(of: send, after: cursor, limit: pageSize)
            #expect(page.outcomes.count <= pageSize)
            all += page.outcomes
            cursor = page.next
        } while cursor != nil
        return all
    }

    /// What a recording of `outcomes` lists, in order: the rows as given, then each batch (development, then
    /// production; without sandbox unique ids, then with) by token, each at its last answer's time.
    private static func listed(_ outcomes: [DeliveryOutcome], of send: SendID) -> [DeliveryOutcome] {
        let batched = outcomes.filter { AcceptedBatch.holds($0, of: send) }
        let rows = outcomes.filter { !AcceptedBatch.holds($0, of: send) }
        return rows
            + [APNSEnvironment.development, .production].flatMap { environment in
                [false, true].flatMap { keepsUniqueIDs in
                    let batch = batched.filter {
                        $0.environment == environment && ($0.apnsUniqueID != nil) == keepsUniqueIDs
                    }
                    let at = batch.map(\.at).max()
                    return batch.sorted { $0.token.hex < $1.token.hex }.map {
                        var listed = $0
                        listed.at = at ?? $0.at
                        return listed
                    }
                }
            }
    }

    static func batchedPages(_ context: Context) async throws {
        let store = context.store
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        var expected: [DeliveryOutcome] = []
        for round in 0..<3 {
            context.clock.advance(by: .seconds(1))
            let now = context.clock.now()
            // Answers come out of order: devices given high to low, an exception among every five.
            let devices = (1...25).map { round * 100 + $0 }.reversed()
            let outcomes = devices.map { n in
                guard n % 5 != 0 else {
                    return outcome(n, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed)
                }
                var accepted = firstTry(n, of: send.id, at: now.addingTimeInterval(n % 3 == 0 ? -0.5 : 0))
                // The sandbox's unique ids, kept in their own batch; one not written as APNs does keeps a row.
                if n % 4 == 0 { accepted.apnsUniqueID = UUID().uuidString.lowercased() }
                if n % 4 == 2, n % 3 == 0 { accepted.apnsUniqueID = UUID().uuidString }
                return accepted
            }
            let counts = try await store.recordOutcomes(Array(outcomes), for: send.id, checkpoint: nil)
            #expect(counts == OutcomeCounts(accepted: 20 * (round + 1), rejected: 5 * (round + 1)))
            expected += listed(Array(outcomes), of: send.id)
        }
        for pageSize in [1, 7, 20, 100] {
            #expect(try await allOutcomes(of: send.id, pageSize: pageSize, in: store) == expected, "pages of \(pageSize)")
        }
        #expect(try await store.send(send.id)?.counts == OutcomeCounts(accepted: 60, rejected: 15))
        #expect(
            try await outcomeGroups(of: send.id, in: store)
                == [
                    OutcomeGroup(kind: "accepted", reason: nil, action: nil, count: 60),
                    OutcomeGroup(kind: "rejected", reason: "Unregistered", action: .removed, count: 15),
                ])
        // Three recordings of two environments, with and without unique ids: nine batch rows (production has no
        // device divisible by 4); the exceptions' rows.
        if let versioned = store as? any VersionedMigrations {
            let rows = try await versioned.rowCounts()
            #expect(rows["send_acceptances"] == 9)
            #expect(rows["send_outcomes"] == 15 + 5, "the rejections, and 6, 18, 102, 114 and 222's unique ids")
        }
    }

    static func batchedReaders(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        _ = try await store.upsert(registration(3))
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running, topic: topic))
        let other = try await store.createSend(NewSend(target: "tag u", summary: "other", status: .running, topic: topic))
        // 8-byte tokens where the bytes of a third run across two neighbours: inside their range, not one of them.
        let (left, right, across) = try (
            DeviceToken(hex: "0102030405060708"), DeviceToken(hex: "090a0b0c0d0e0f10"), DeviceToken(hex: "05060708090a0b0c"))
        let short = [left, right].map {
            DeliveryOutcome(
                token: $0, environment: .production, result: .accepted(apnsID: .derived(send: send.id, token: $0)), at: now)
        }
        var sandboxed = firstTry(8, of: send.id, at: now)
        sandboxed.apnsUniqueID = "a8d3c0de-0000-4000-8000-000000000008"
        let recorded = (1...7).map { firstTry($0, of: send.id, at: now) } + [sandboxed, firstTry(9, of: send.id, at: now)]
            + short
        #expect(
            try await store.recordOutcomes(recorded, for: send.id, checkpoint: nil) == OutcomeCounts(accepted: 11))
        _ = try await store.recordOutcomes([firstTry(20, of: other.id, at: now)], for: other.id, checkpoint: nil)

        for expected in recorded {
            #expect(try await store.deliveryTrace(of: send.id, to: expected.token).outcome == expected)
            #expect(try await store.deliveryTrace(of: other.id, to: expected.token).outcome == nil)
        }
        #expect(try await store.deliveryTrace(of: send.id, to: across).outcome == nil, "bytes across two tokens")
        #expect(try await store.deliveryTrace(of: send.id, to: token(10)).outcome == nil)
        #expect(try await store.deliveryTrace(of: send.id, to: token(20)).outcome == nil, "another send's")
        #expect(
            try await store.deliveries(to: token(3), limit: 10)
                == [DeviceDelivery(sendID: send.id, target: "tag t", summary: "alert", outcome: firstTry(3, of: send.id, at: now))])
        #expect(try await store.deliveries(to: left, limit: 10).map(\.outcome) == [short[0]])
        #expect(try await store.deliveries(to: across, limit: 10).isEmpty)
        #expect(
            try await store.tokensWithOutcomes(of: send.id, among: [token(2), token(10), token(20), left, across])
                == [token(2), left])

        let reports = try await store.recordReceipts([
            ReceiptEvent(kind: .opened, token: token(3), sendID: nil, apnsID: .derived(send: send.id, token: token(3)), at: now),
            ReceiptEvent(kind: .received, token: token(4), sendID: send.id, at: now),
            ReceiptEvent(kind: .received, token: right, sendID: send.id, at: now),
            ReceiptEvent(kind: .received, token: across, sendID: send.id, at: now),
            ReceiptEvent(kind: .received, token: token(10), sendID: send.id, at: now),
            ReceiptEvent(kind: .received, token: token(20), sendID: send.id, at: now),
            ReceiptEvent(kind: .received, token: token(5), sendID: nil, apnsID: .derived(send: other.id, token: token(5)), at: now),
        ])
        #expect(
            reports == [.recorded, .recorded, .recorded, .unknownDelivery, .unknownDelivery, .unknownDelivery, .unknownDelivery],
            "only devices the send reached count")
        #expect(try await store.receiptCounts(of: send.id).received == 3)
        #expect(try await store.receiptCounts(of: send.id).opened == 1)
    }

    static func batchedRepeats(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        let first = [1, 3, 5, 7, 9].map { firstTry($0, of: send.id, at: now) }
            + [outcome(11, .failed(message: "no answer"), at: now)]
        #expect(try await store.recordOutcomes(first, for: send.id, checkpoint: nil) == OutcomeCounts(accepted: 5, failed: 1))
        // A resumed run sends some devices again: those the send has keep their outcome, however it ended.
        let again = [
            firstTry(2, of: send.id, at: now), firstTry(3, of: send.id, at: now), firstTry(11, of: send.id, at: now),
            outcome(7, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now),
            outcome(4, .failed(message: "no answer"), at: now), firstTry(4, of: send.id, at: now),
            firstTry(12, of: send.id, at: now),
        ]
        #expect(
            try await store.recordOutcomes(again, for: send.id, checkpoint: nil)
                == OutcomeCounts(accepted: 7, failed: 2), "2 and 12 accepted, 4 failed (its first outcome in the batch)")
        let all = try await allOutcomes(of: send.id, pageSize: 4, in: store)
        #expect(all.count == 9)
        #expect(Set(all.map(\.token)) == Set([1, 2, 3, 4, 5, 7, 9, 11, 12].map(token)))
        #expect(try await store.deliveryTrace(of: send.id, to: token(7)).outcome == first[3])
        #expect(try await store.deliveryTrace(of: send.id, to: token(11)).outcome?.result == .failed(message: "no answer"))
        #expect(
            try await store.tokensWithOutcomes(of: send.id, among: (1...13).map(token))
                == Set([1, 2, 3, 4, 5, 7, 9, 11, 12].map(token)))
    }

    static func batchedRetention(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let old = try await store.createSend(NewSend(target: "tag t", summary: "old", status: .running))
        _ = try await store.recordOutcomes((1...30).map { firstTry($0, of: old.id, at: now) }, for: old.id, checkpoint: nil)
        _ = try await store.updateSend(old.id, SendUpdate(status: .completed))
        let running = try await store.createSend(NewSend(target: "tag t", summary: "running", status: .running))
        _ = try await store.recordOutcomes((1...3).map { firstTry($0, of: running.id, at: now) }, for: running.id, checkpoint: nil)
        context.clock.advance(by: .seconds(10 * 86_400))
        let cutoff = context.clock.now().addingTimeInterval(-86_400)
        try await deleteAll(.receiptEvents, before: cutoff, limit: 100, on: store)
        try await deleteAll(.outcomes, before: cutoff, limit: 100, on: store)
        #expect(try await store.outcomes(of: old.id, after: nil, limit: 10).outcomes.isEmpty)
        #expect(try await store.deliveryTrace(of: old.id, to: token(1)).outcome == nil)
        #expect(try await store.send(old.id)?.counts == OutcomeCounts(accepted: 30), "a send keeps its counts")
        #expect(
            try await store.recordReceipts([ReceiptEvent(kind: .received, token: token(2), sendID: old.id, at: now)])
                == [.unknownDelivery])
        #expect(try await store.outcomes(of: running.id, after: nil, limit: 10).outcomes.count == 3)
        if let versioned = store as? any VersionedMigrations {
            let rows = try await versioned.rowCounts()
            #expect(rows["send_acceptances"] == 2, "the running send's batches (one per environment): \(rows)")
        }
    }
}
