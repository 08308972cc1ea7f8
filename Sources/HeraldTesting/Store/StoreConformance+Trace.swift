import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var traceCases: [Case] {
        [
            Case(
                "a delivery trace reads a device's outcome with its apns-unique-id, the attempts of a retried notification (none for one decided at once) and its receipt events, from batches and inline sends",
                deliveryTraces),
            Case("retention deletes a send's delivery attempts with its outcomes", retentionOfAttempts),
            Case(
                "a Live Activity's priority-10 updates fit its hourly budget exactly once each, on two instances at once; forced ones count beyond it; a new hour starts afresh",
                activityBudgets),
            Case(
                "an app's push-to-start pace grants exactly its rate per second across two instances at once, counts what waits, and starts afresh each second and per app",
                pushToStartPace),
        ]
    }

    /// Three attempts: a 503 retried after 250 ms, no answer retried at once, then accepted.
    static func retriedAttempts(at now: Date) -> [DeliveryAttempt] {
        [
            DeliveryAttempt(
                number: 1, at: now, environment: .development, connection: 1, status: 503,
                reason: "ServiceUnavailable", apnsUniqueID: "00000000-0000-4000-8000-000000000001",
                retryAfter: .milliseconds(250)),
            DeliveryAttempt(
                number: 2, at: now.addingTimeInterval(0.25), environment: .development, reason: "connectionClosed",
                message: "The connection closed before the answer.", retryAfter: .zero),
            DeliveryAttempt(
                number: 3, at: now.addingTimeInterval(0.5), environment: .development, connection: 2, status: 200,
                apnsUniqueID: "00000000-0000-4000-8000-000000000003"),
        ]
    }

    static func deliveryTraces(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        var retried = outcome(2, .accepted(apnsID: APNSID()), at: now)
        retried.apnsUniqueID = "00000000-0000-4000-8000-000000000003"
        retried.attempts = retriedAttempts(at: now)
        var once = outcome(4, .accepted(apnsID: APNSID()), at: now)
        once.apnsUniqueID = "00000000-0000-4000-8000-000000000004"
        let rejected = outcome(1, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed)
        _ = try await store.recordOutcomes([retried, once, rejected], for: send.id, checkpoint: nil)
        #expect(
            try await store.recordReceipts([
                ReceiptEvent(kind: .opened, token: token(2), sendID: send.id, at: now.addingTimeInterval(60))
            ]) == [.recorded])

        let trace = try await store.deliveryTrace(of: send.id, to: token(2))
        #expect(trace.outcome == retried, "the outcome, its apns-unique-id and its three attempts read back")
        #expect(
            trace.receipts.map(\.kind) == [.received, .opened],
            "opened, and the received it implies, in the order they happened")
        #expect(trace.receipts.allSatisfy { $0.at == now.addingTimeInterval(60) && $0.action == nil })
        let single = try await store.deliveryTrace(of: send.id, to: token(4))
        #expect(single.outcome == once && single.outcome?.attempts.isEmpty == true && single.receipts.isEmpty)
        #expect(try await store.deliveryTrace(of: send.id, to: token(1)).outcome?.action == .removed)
        #expect(try await store.deliveryTrace(of: send.id, to: token(9)) == StoredDeliveryTrace(), "not targeted")
        #expect(try await store.deliveryTrace(of: SendID(), to: token(2)) == StoredDeliveryTrace(), "unknown send")
        let page = try await store.outcomes(of: send.id, after: nil, limit: 10).outcomes
        #expect(page.first { $0.token == token(2) }?.apnsUniqueID == retried.apnsUniqueID)
        #expect(page.allSatisfy { $0.attempts.isEmpty }, "outcome pages leave the attempts out")

        // An inline send, recorded whole: a corrected environment keeps both hosts' attempts.
        var corrected = outcome(6, .accepted(apnsID: APNSID()), at: now, action: .environmentCorrected)
        corrected.attempts = [
            DeliveryAttempt(number: 1, at: now, environment: .production, status: 400, reason: "BadDeviceToken"),
            DeliveryAttempt(number: 2, at: now, environment: .development, status: 200),
        ]
        let inline = try await store.recordFinishedSend(
            NewSend(target: "token", summary: "alert", status: .completed), outcomes: [corrected])
        #expect(try await store.deliveryTrace(of: inline.id, to: token(6)).outcome == corrected)
    }

    static func retentionOfAttempts(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let send = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
        var retried = outcome(2, .accepted(apnsID: APNSID()), at: now)
        retried.attempts = retriedAttempts(at: now)
        _ = try await store.recordOutcomes([retried], for: send.id, checkpoint: nil)
        _ = try await store.updateSend(send.id, SendUpdate(status: .completed))
        let young = try await store.recordFinishedSend(
            NewSend(target: "token", summary: "alert", status: .completed), outcomes: [retried])
        #expect(try await store.deliveryTrace(of: young.id, to: token(2)).outcome?.attempts.count == 3)

        context.clock.advance(by: .seconds(86_400 * 10))
        let youngest = try await store.recordFinishedSend(
            NewSend(target: "token", summary: "alert", status: .completed), outcomes: [retried])
        try await deleteAll(.outcomes, before: context.clock.now().addingTimeInterval(-86_400), limit: 100, on: store)
        #expect(try await store.deliveryTrace(of: send.id, to: token(2)).outcome == nil)
        #expect(try await store.deliveryTrace(of: young.id, to: token(2)).outcome == nil)
        #expect(try await store.deliveryTrace(of: youngest.id, to: token(2)).outcome?.attempts.count == 3)
        // The old send's attempts are gone too: an outcome recorded again for the device has none.
        var again = retried
        again.attempts = []
        _ = try await store.recordOutcomes([again], for: send.id, checkpoint: nil)
        #expect(try await store.deliveryTrace(of: send.id, to: token(2)).outcome?.attempts == [])
    }

    static func activityBudgets(_ context: Context) async throws {
        let store = context.store
        // An hour that starts now, so the case's updates fall in it.
        context.clock.set(to: Date(timeIntervalSince1970: 1_767_225_600))
        let now = context.clock.now()
        let hour = ActivityBudgetUse.hour(of: now)
        #expect(hour == now)
        #expect(
            try await store.activityBudgetUse(topic: topic, activityID: "order-1", at: now)
                == ActivityBudgetUse(hour: hour))

        // 20 updates at once from two instances against a budget of 5: exactly 5 fit.
        let fitted = try await context.withSecondInstance { second in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<20 {
                    let instance = n.isMultiple(of: 2) ? store : second
                    group.addTask {
                        try await instance.spendActivityBudget(
                            topic: topic, activityID: "order-1", budget: 5, force: false, at: now
                        ).fitted
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        #expect(fitted == 5)
        var use = try await store.activityBudgetUse(topic: topic, activityID: "order-1", at: now)
        #expect(use.spent == 5 && use.downgraded == 15)

        let forced = try await store.spendActivityBudget(
            topic: topic, activityID: "order-1", budget: 5, force: true, at: now.addingTimeInterval(60))
        #expect(forced.fitted && forced.spent == 6 && forced.downgraded == 15, "forced beyond the budget, and counted")
        let other = try await store.spendActivityBudget(
            topic: topic, activityID: "order-2", budget: 5, force: false, at: now)
        #expect(other.fitted && other.spent == 1, "each activity has its own budget")
        let otherApp = try await store.spendActivityBudget(
            topic: "com.example.other", activityID: "order-1", budget: 5, force: false, at: now)
        #expect(otherApp.fitted && otherApp.spent == 1, "and each app")
        let none = try await store.spendActivityBudget(
            topic: topic, activityID: "order-3", budget: 0, force: false, at: now)
        #expect(!none.fitted && none.spent == 0 && none.downgraded == 1, "a budget of 0 lets nothing through")

        let nextHour = now.addingTimeInterval(3600)
        let fresh = try await store.spendActivityBudget(
            topic: topic, activityID: "order-1", budget: 5, force: false, at: nextHour)
        #expect(fresh.fitted && fresh.spent == 1 && fresh.downgraded == 0 && fresh.hour == nextHour)
        use = try await store.activityBudgetUse(topic: topic, activityID: "order-1", at: now)
        #expect(use == ActivityBudgetUse(hour: hour), "the earlier hour's row is gone")
    }

    static func pushToStartPace(_ context: Context) async throws {
        let store = context.store
        let now = Date(timeIntervalSince1970: 1_767_225_600.25)
        let second = PushToStartPace.second(of: now)
        #expect(second == Date(timeIntervalSince1970: 1_767_225_600))

        // 12 takes of 3 at once from two instances against 10 a second: 10 granted in all, 26 wait.
        let granted = try await context.withSecondInstance { other in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<12 {
                    let instance = n.isMultiple(of: 2) ? store : other
                    group.addTask {
                        try await instance.takePushToStartPace(topic: topic, wanted: 3, perSecond: 10, at: now).granted
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        #expect(granted.reduce(0, +) == 10 && granted.allSatisfy { (0...3).contains($0) }, "\(granted)")
        let spent = try await store.takePushToStartPace(
            topic: topic, wanted: 1, perSecond: 10, at: now.addingTimeInterval(0.5))
        #expect(
            spent == PushToStartPace(second: second, granted: 0, sentThisSecond: 10, heldBackThisSecond: 27),
            "the second's pace is spent")
        #expect(
            try await store.activityBudgetUse(topic: topic, activityID: "order-1", at: now) == ActivityBudgetUse(
                hour: ActivityBudgetUse.hour(of: now)), "an activity's update budget is another row")

        let otherApp = try await store.takePushToStartPace(topic: "com.example.other", wanted: 4, perSecond: 10, at: now)
        #expect(otherApp.granted == 4 && otherApp.sentThisSecond == 4, "each app has its own pace")
        let next = try await store.takePushToStartPace(
            topic: topic, wanted: 25, perSecond: 10, at: now.addingTimeInterval(1))
        #expect(next == PushToStartPace(second: second.addingTimeInterval(1), granted: 10, sentThisSecond: 10, heldBackThisSecond: 15))
        let late = try await store.takePushToStartPace(
            topic: topic, wanted: 1, perSecond: 10, at: now.addingTimeInterval(0.7))
        #expect(
            late.granted == 0 && late.sentThisSecond == 10,
            "a take of a second that has just ended, reaching the store after a take of the next, finds it spent: \(late)")
        let fresh = try await store.takePushToStartPace(
            topic: topic, wanted: 2, perSecond: 10, at: now.addingTimeInterval(2))
        #expect(fresh.granted == 2 && fresh.sentThisSecond == 2, "a new second starts afresh")
    }
}
