import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var pushToStartCheckCases: [Case] {
        [
            Case(
                "a push-to-start check: starts recorded while the activity is unchecked, due once its send ended long enough ago, recorded once, misses in a row made stale (left out of sends, with a token.stale event), a start resets them, the trace tells each device's",
                pushToStartChecks)
        ]
    }

    static func pushToStartChecks(_ context: Context) async throws {
        let store = context.store
        let installations = (1...3).map { _ in UUID() }
        var registrations: [TokenRegistration] = []
        for n in 1...3 {
            var start = registration(n, kind: .liveActivityStart, installation: installations[n - 1])
            start.activityType = "MatchAttributes"
            registrations.append(start)
            _ = try await store.upsert(start)
        }
        _ = try await store.createWebhookEndpoint(
            NewWebhookEndpoint(
                app: topic, url: "https://hooks.example.com/herald", events: [.tokenStale],
                secret: "whsec_" + String(repeating: "s", count: 32)))

        /// A finished start send to `tokens`, APNs having accepted each, and its activity.
        func started(_ id: String, _ tokens: [Int]) async throws -> SendRecord {
            let send = try await store.recordFinishedSend(
                NewSend(target: "user fans", summary: "liveactivity start", status: .completed, topic: topic),
                outcomes: tokens.map { outcome($0, .accepted(apnsID: APNSID()), at: context.clock.now()) })
            _ = try #require(
                try await store.createActivity(
                    NewActivity(topic: topic, id: id, activityType: "MatchAttributes", startSendID: send.id)))
            return send
        }

        let first = try await started("match-1", [1, 2, 3])
        _ = try await store.createActivity(NewActivity(topic: topic, id: "unchecked", activityType: "MatchAttributes"))
        try await store.recordActivityStart(topic: topic, activityID: "match-1", installationID: installations[0])
        try await store.recordActivityStart(topic: topic, activityID: "match-1", installationID: installations[0])
        try await store.recordActivityStart(topic: topic, activityID: "unchecked", installationID: installations[1])
        #expect(try await store.startedInstallations(topic: topic, activityID: "match-1") == [installations[0]])
        #expect(
            try await store.startedInstallations(topic: topic, activityID: "unchecked").isEmpty,
            "an activity Herald did not start (no start send) records no start")
        #expect(
            try await store.activityStartsDue(endedBy: context.clock.now().addingTimeInterval(-1), limit: 10).isEmpty,
            "its send ended too recently")
        let due = try await store.activityStartsDue(endedBy: context.clock.now(), limit: 10)
        #expect(due == [DueStartCheck(topic: topic, activityID: "match-1", sendID: first.id)])
        #expect(try await store.deliveryTrace(of: first.id, to: token(2)).activityStart == .pending)

        context.clock.advance(by: .seconds(600))
        let check = StartCheck(
            due: due[0], started: [token(1)], notStarted: [token(2), token(3)], unknown: 0, staleAfter: 2)
        let recorded = try #require(try await store.recordStartCheck(check))
        let checkedAt = context.clock.now()
        #expect(recorded.activity.startCheck == ActivityStartCheck(started: 1, notStarted: 2, checkedAt: checkedAt))
        #expect(recorded.newlyStale.isEmpty, "one miss is not two in a row")
        #expect(try await store.recordStartCheck(check) == nil, "an activity is checked once: another instance's is refused")
        #expect(try await store.activity(topic: topic, id: "match-1")?.startCheck?.notStarted == 2)
        #expect(try await store.activityStartsDue(endedBy: checkedAt, limit: 10).isEmpty)
        #expect(try await store.startedInstallations(topic: topic, activityID: "match-1").isEmpty, "the check used them")
        try await store.recordActivityStart(topic: topic, activityID: "match-1", installationID: installations[1])
        #expect(try await store.startedInstallations(topic: topic, activityID: "match-1").isEmpty, "nor is one kept after it")
        #expect(try await store.deliveryTrace(of: first.id, to: token(1)).activityStart == .started(checkedAt: checkedAt))
        #expect(try await store.deliveryTrace(of: first.id, to: token(2)).activityStart == .notStarted(checkedAt: checkedAt))

        // Token 2 misses again: two in a row, stale. Token 3 starts this time: its count starts again.
        let second = try await started("match-2", [2, 3])
        context.clock.advance(by: .seconds(600))
        let again = try #require(
            try await store.recordStartCheck(
                StartCheck(
                    due: DueStartCheck(topic: topic, activityID: "match-2", sendID: second.id), started: [token(3)],
                    notStarted: [token(2)], unknown: 0, staleAfter: 2)))
        #expect(again.newlyStale == [token(2)])
        let stale = try #require(try await store.device(token(2)))
        #expect(stale.staleSince == context.clock.now() && !stale.isActive)
        #expect(try await store.count(matching: .topic(topic)) == 2, "a stale token is left out of sends")
        #expect(try await store.count(matching: .topic(topic).includingInvalidated()) == 3, "and shown to administrators")
        _ = try await store.upsert(registrations[1])
        #expect(
            try await store.device(token(2))?.staleSince != nil,
            "the same token registered again is the same stale token")
        let batch = try #require(
            try await store.claimWebhookBatch(
                worker: "conformance", leaseUntil: context.clock.now().addingTimeInterval(60), limit: 10))
        #expect(batch.events.map(\.type) == [.tokenStale])
        let data = try JSONValue(parsing: batch.events[0].data)
        #expect(data["token"]?.stringValue == token(2).hex && data["activityId"] == "match-2")

        let third = try await started("match-3", [3])
        context.clock.advance(by: .seconds(600))
        let once = try #require(
            try await store.recordStartCheck(
                StartCheck(
                    due: DueStartCheck(topic: topic, activityID: "match-3", sendID: third.id), started: [],
                    notStarted: [token(3)], unknown: 0, staleAfter: 2)))
        #expect(once.newlyStale.isEmpty, "token 3's start reset its misses: one in a row now")
    }
}
