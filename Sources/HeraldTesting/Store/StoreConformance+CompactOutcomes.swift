import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var compactOutcomeCases: [Case] {
        [
            Case(
                "an outcome under its send's derived apns-id stores none and reads back with it everywhere: the page, the trace, a device's deliveries, receipts matched by apns-id; other apns-ids stay stored",
                derivedAPNSIDs),
            Case(
                "outcomes name their send by an integer reference: each send reads only its own; a resumed batch skips the devices the send has, and a device twice in a batch is recorded once",
                sendReferences),
            Case(
                "tokens that end in the same 8 bytes are different devices: each has its own outcome, trace, deliveries and receipts",
                sharedTokenSuffix),
        ]
    }

    static func derivedAPNSIDs(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        let derived = outcome(1, .accepted(apnsID: APNSID.derived(send: send.id, token: token(1))), at: now)
        var sandbox = outcome(2, .accepted(apnsID: APNSID.derived(send: send.id, token: token(2))), at: now)
        sandbox.apnsUniqueID = "00000000-0000-4000-8000-000000000002"
        // A caller's own apns-id (an inline send may name one), and the derived id of another send: both stored.
        let own = outcome(3, .accepted(apnsID: APNSID()), at: now)
        let otherSends = outcome(5, .accepted(apnsID: APNSID.derived(send: SendID(), token: token(5))), at: now)
        let rejected = outcome(4, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed)
        let all = [derived, sandbox, own, rejected, otherSends]
        #expect(
            try await store.recordOutcomes(all, for: send.id, checkpoint: nil)
                == OutcomeCounts(accepted: 4, rejected: 1))

        // A recording numbers its rows first, in the order given, then its first-try acceptances (AcceptedBatch): by
        // environment, then those with a sandbox unique id after those without.
        #expect(
            try await store.outcomes(of: send.id, after: nil, limit: 10).outcomes
                == [own, rejected, otherSends, sandbox, derived])
        for recorded in all {
            #expect(try await store.deliveryTrace(of: send.id, to: recorded.token).outcome == recorded)
            #expect(try await store.deliveries(to: recorded.token, limit: 10).map(\.outcome) == [recorded])
        }
        #expect(
            try await store.tokensWithOutcomes(of: send.id, among: (1...7).map(token)) == Set((1...5).map(token)))

        // Receipts that name only the apns-id find the send, derived or stored; a wrong one finds nothing.
        let reports = [derived, own, otherSends].map { recorded in
            ReceiptEvent(kind: .opened, token: recorded.token, sendID: nil, apnsID: acceptedID(recorded), at: now)
        }
        #expect(try await store.recordReceipts(reports) == [.recorded, .recorded, .recorded])
        #expect(
            try await store.recordReceipts([
                ReceiptEvent(kind: .opened, token: token(2), sendID: nil, apnsID: APNSID(), at: now),
                ReceiptEvent(
                    kind: .opened, token: token(4), sendID: nil, apnsID: APNSID.derived(send: send.id, token: token(4)),
                    at: now),
            ]) == [.unknownDelivery, .unknownDelivery], "an unknown apns-id; a rejected notification's derived one")
        #expect(
            try await store.recordReceipts([
                ReceiptEvent(kind: .opened, token: token(2), sendID: send.id, apnsID: acceptedID(sandbox), at: now)
            ]) == [.recorded], "a receipt naming the send and the derived apns-id")

        // Deleting every accepted outcome that stores an apns-id leaves exactly those under their send's derived one.
        let versioned = try #require(store as? any VersionedMigrations)
        try await versioned.executeRaw(["DELETE FROM send_outcomes WHERE apns_id IS NOT NULL"])
        #expect(try await store.outcomes(of: send.id, after: nil, limit: 10).outcomes == [rejected, sandbox, derived])
    }

    static func sendReferences(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let first = try await store.createSend(NewSend(target: "tag a", summary: "a", status: .running))
        let second = try await store.createSend(NewSend(target: "tag b", summary: "b", status: .running))
        let inline = try await store.recordFinishedSend(
            NewSend(target: "user u", summary: "c", status: .completed),
            outcomes: [outcome(1, .accepted(apnsID: APNSID()), at: now)])
        let batch = (1...4).map { outcome($0, .accepted(apnsID: APNSID()), at: now) }
        _ = try await store.recordOutcomes(batch, for: first.id, checkpoint: nil)
        _ = try await store.recordOutcomes(Array(batch.prefix(2)), for: second.id, checkpoint: nil)
        // A resumed batch: the devices the send has keep their outcomes and are not counted again.
        let again = (3...6).map { outcome($0, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now) }
        #expect(
            try await store.recordOutcomes(again, for: second.id, checkpoint: nil)
                == OutcomeCounts(accepted: 2, rejected: 4))
        let twice = [outcome(7, .accepted(apnsID: APNSID()), at: now), outcome(7, .failed(message: "again"), at: now)]
        #expect(
            try await store.recordOutcomes(twice, for: first.id, checkpoint: nil) == OutcomeCounts(accepted: 5),
            "the first of the two")
        #expect(try await store.outcomes(of: first.id, after: nil, limit: 10).outcomes == batch + [twice[0]])
        #expect(try await store.outcomes(of: second.id, after: nil, limit: 10).outcomes == Array(batch.prefix(2)) + again)
        #expect(try await store.outcomes(of: inline.id, after: nil, limit: 10).outcomes.map(\.token) == [token(1)])
        #expect(
            try await store.deliveries(to: token(1), limit: 10).map(\.sendID).sorted { $0.description < $1.description }
                == [first.id, second.id, inline.id].sorted { $0.description < $1.description })
        #expect(try await outcomeGroups(of: second.id, in: store).map(\.count) == [4, 2])
        #expect(try await store.outcomes(of: SendID(), after: nil, limit: 10).outcomes.isEmpty)
        await #expect(throws: StoreError.self) {
            try await store.recordOutcomes(batch, for: SendID(), checkpoint: nil)
        }
    }

    static func sharedTokenSuffix(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let suffix = "00000000000000c8"
        let (a, b, c) = try (
            DeviceToken(hex: String(repeating: "a", count: 48) + suffix),
            DeviceToken(hex: String(repeating: "b", count: 48) + suffix),
            DeviceToken(hex: String(repeating: "c", count: 48) + suffix))
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        func accepted(_ token: DeviceToken) -> DeliveryOutcome {
            DeliveryOutcome(
                token: token, environment: .production,
                result: .accepted(apnsID: APNSID.derived(send: send.id, token: token)), at: now)
        }
        let rejectedB = DeliveryOutcome(
            token: b, environment: .production, result: .rejected(status: 400, reason: .badDeviceToken, timestamp: nil),
            at: now)
        #expect(
            try await store.recordOutcomes([accepted(a), rejectedB], for: send.id, checkpoint: nil)
                == OutcomeCounts(accepted: 1, rejected: 1))
        #expect(try await store.tokensWithOutcomes(of: send.id, among: [a, b, c]) == [a, b])
        #expect(try await store.deliveryTrace(of: send.id, to: a).outcome == accepted(a))
        #expect(try await store.deliveryTrace(of: send.id, to: b).outcome == rejectedB)
        #expect(try await store.deliveryTrace(of: send.id, to: c).outcome == nil)
        #expect(try await store.deliveries(to: a, limit: 10).map(\.outcome) == [accepted(a)])
        #expect(try await store.deliveries(to: c, limit: 10).isEmpty)
        // c is new to the send, whatever a and b ended in; b keeps its rejection.
        #expect(
            try await store.recordOutcomes([accepted(b), accepted(c)], for: send.id, checkpoint: nil)
                == OutcomeCounts(accepted: 2, rejected: 1))
        #expect(
            try await store.recordReceipts([
                ReceiptEvent(kind: .opened, token: c, sendID: nil, apnsID: acceptedID(accepted(c)), at: now),
                ReceiptEvent(kind: .opened, token: b, sendID: nil, apnsID: acceptedID(accepted(b)), at: now),
                ReceiptEvent(kind: .opened, token: a, sendID: send.id, at: now),
            ]) == [.recorded, .unknownDelivery, .recorded])
    }

    /// The apns-id of an accepted outcome.
    static func acceptedID(_ outcome: DeliveryOutcome) -> APNSID? {
        if case .accepted(let id) = outcome.result { id } else { nil }
    }

    /// Migrates a fresh database to version 26, fills `send_outcomes` as it was then (send ids, hex tokens, every
    /// apns-id stored), applies 27 and checks that every outcome reads back as it was, through every reader.
    public static func checkUpgradeToCompactOutcomes(on fixture: StoreFixture) async throws {
        try await withUnmigrated(fixture) { store, upgradable, clock in
            try await upgradable.migrate(through: 26)
            let (done, other) = (SendID(), SendID())
            let at = StoreTime.microseconds(clock.now())
            let derived = APNSID.derived(send: done, token: token(1))
            let own = APNSID()
            try await upgradable.executeRaw([
                """
                INSERT INTO sends (id, created_at, updated_at, target, summary, status, target_count, accepted, \
                rejected, failed) VALUES \
                ('\(done)', \(at), \(at), 'user 1', 'done', 'completed', 3, 2, 1, 0), \
                ('\(other)', \(at), \(at), 'user 2', 'other', 'completed', 1, 1, 0, 0)
                """,
                """
                INSERT INTO send_outcomes (send_id, seq, token, environment, outcome, apns_id, status, reason, \
                apns_timestamp, message, at, action, apns_unique_id) VALUES \
                ('\(done)', 1, '\(token(1).hex)', 'production', 'accepted', '\(derived)', NULL, NULL, NULL, \
                NULL, \(at), NULL, NULL), \
                ('\(done)', 2, '\(token(2).hex)', 'development', 'accepted', '\(own)', NULL, NULL, NULL, NULL, \
                \(at), NULL, '00000000-0000-4000-8000-000000000002'), \
                ('\(done)', 3, '\(token(3).hex)', 'production', 'rejected', NULL, 410, 'Unregistered', \(at), \
                NULL, \(at), 'removed', NULL), \
                ('\(other)', 1, '\(token(1).hex)', 'production', 'accepted', '\(APNSID())', NULL, NULL, NULL, \
                NULL, \(at), NULL, NULL)
                """,
            ])
            let before = try await upgradable.rowCounts()

            try await store.migrate()
            #expect(try await store.health().schemaVersion == StoreSchema.latestVersion)
            #expect(try await upgradable.rowCounts()["send_outcomes"] == before["send_outcomes"])
            #expect(try await upgradable.rowCounts()["sends"] == before["sends"])
            let outcomes = try await store.outcomes(of: done, after: nil, limit: 10).outcomes
            #expect(outcomes.map(\.token) == [token(1), token(2), token(3)], "in their order")
            #expect(outcomes.map(acceptedID) == [derived, own, nil])
            #expect(outcomes[1].apnsUniqueID == "00000000-0000-4000-8000-000000000002")
            #expect(outcomes[1].environment == .development && outcomes[2].action == .removed)
            #expect(try await store.deliveryTrace(of: done, to: token(3)).outcome == outcomes[2])
            #expect(Set(try await store.deliveries(to: token(1), limit: 10).map(\.sendID)) == [done, other])
            #expect(
                try await store.recordReceipts([
                    ReceiptEvent(kind: .opened, token: token(2), sendID: nil, apnsID: own, at: clock.now())
                ]) == [.recorded])

            // Sends made after the migration get references of their own; the outcomes before stay theirs.
            let later = try await store.createSend(NewSend(target: "user 3", summary: "later", status: .running))
            _ = try await store.recordOutcomes(
                [outcome(1, .accepted(apnsID: APNSID.derived(send: later.id, token: token(1))), at: clock.now())],
                for: later.id, checkpoint: nil)
            #expect(try await store.outcomes(of: later.id, after: nil, limit: 10).outcomes.count == 1)
            #expect(try await store.outcomes(of: done, after: nil, limit: 10).outcomes == outcomes)
            #expect(Set(try await store.deliveries(to: token(1), limit: 10).map(\.sendID)) == [done, other, later.id])
        }
    }
}
