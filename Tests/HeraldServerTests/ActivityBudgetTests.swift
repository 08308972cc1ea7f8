import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// Live Activity update budgets through the real server and an emulator that models Apple's throttling: beyond the
/// budget the emulator accepts priority-10 updates but drops them, as a device over budget would.
@Suite("Live Activities: the priority-10 update budget", .timeLimit(.minutes(2)))
struct ActivityBudgetTests {
    /// Starts `order-1` and registers one update token for it; returns the key and the update token.
    static func activity(_ client: ServerClient, _ app: HeraldApplication) async throws -> (String, DeviceToken) {
        let key = try await SendTests.key(app)
        let update = testToken(0xe1)
        try await client.register(
            update, debug: true, extra: #", "tokenKind": "liveactivity", "activityId": "order-1""#)
        _ = try await app.store.createActivity(
            NewActivity(topic: ServerHarness.topic, id: "order-1", activityType: "DeliveryAttributes"))
        return (key, update)
    }

    static func update(_ client: ServerClient, key: String, stop: Int, extra: String = "") async throws
        -> ServerClient.Answer
    {
        let answer = try await client.call(
            .patch, "/api/activities/order-1",
            body: #"{"contentState": {"stop": \#(stop)}, "alert": {"title": "Stop \#(stop)"}\#(extra)}"#, bearer: key)
        #expect(answer.status == .ok, "\(answer)")
        return answer
    }

    @Test(
        "beyond the budget, updates with an alert go at priority 5 and the emulator throttles none; a forced one goes at 10; the answer, the activity and /metrics say so",
        arguments: Backend.available)
    func managed(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: { $0.liveActivities.updateBudget = 2 }) { client, app in
            let emulator = try #require(app.emulator)
            try emulator.setLiveActivityBudget(2)
            let (key, token) = try await Self.activity(client, app)
            var answers: [ServerClient.Answer] = []
            for stop in 1...4 { answers.append(try await Self.update(client, key: key, stop: stop)) }
            #expect(answers.map { $0.json["budget"]?["priority"]?.intValue } == [10, 10, 5, 5])
            #expect(answers.map { $0.json["budget"]?["downgraded"]?.boolValue } == [false, false, true, true])
            #expect(answers.last?.json["budget"]?["spentThisHour"] == 2)
            #expect(answers.last?.json["budget"]?["downgradedThisHour"] == 2 && answers.last?.json["budget"]?["limit"] == 2)
            #expect(try emulator.inbox(for: token).map(\.priority) == [10, 10, 5, 5])
            #expect(emulator.counters.liveActivityBudgetDropped == 0, "every update reached the device")

            let forced = try await Self.update(client, key: key, stop: 5, extra: #", "priority": 10, "force": true"#)
            #expect(forced.json["budget"]?["priority"] == 10 && forced.json["budget"]?["forced"] == true, "\(forced)")
            #expect(emulator.counters.liveActivityBudgetDropped == 1, "Apple's budget is spent: the forced one is throttled")

            let refused = try await client.call(
                .patch, "/api/activities/order-1", body: #"{"contentState": {"stop": 6}, "force": true}"#, bearer: key)
            #expect(refused.status == .badRequest && refused.reason == "invalidField", "\(refused)")

            let shown = try await client.call(.get, "/api/activities/order-1", bearer: key)
            #expect(shown.json["budget"]?["spentThisHour"] == 3 && shown.json["budget"]?["downgradedThisHour"] == 2, "\(shown)")
            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains(#"herald_live_activity_updates_downgraded_total{app="\#(ServerHarness.topic)"} 2"#),
                "\(metrics.body.split(separator: "\n").filter { $0.contains("live_activity") })")
            #expect(metrics.body.contains(#"herald_live_activity_updates_forced_total{app="\#(ServerHarness.topic)"} 1"#))
        }
    }

    @Test("without budget management the emulator throttles what goes over Apple's budget", arguments: Backend.available)
    func unmanaged(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: { $0.liveActivities.updateBudget = 0 }) { client, app in
            let emulator = try #require(app.emulator)
            try emulator.setLiveActivityBudget(2)
            let (key, token) = try await Self.activity(client, app)
            for stop in 1...4 {
                let answer = try await Self.update(client, key: key, stop: stop)
                #expect(answer.json["budget"] == nil)
            }
            #expect(emulator.counters.liveActivityBudgetDropped == 2)
            #expect(try emulator.inbox(for: token).count == 2, "two updates never reached the device")
        }
    }

    @Test(
        "two instances on one PostgreSQL database share an activity's budget",
        .enabled(if: Backend.available.contains(.postgres), "needs HERALD_TEST_DATABASE_URL"))
    func sharedAcrossInstances() async throws {
        try await TestDatabase.with(.postgres) { url in
            try await ServerHarness.withTwoInstances(databaseURL: url) {
                $0.liveActivities.updateBudget = 3
            } _: { _, one, two in
                let (key, _) = try await Self.activity(one.1, one.0)
                var priorities: [Int] = []
                for stop in 1...6 {
                    let client = stop.isMultiple(of: 2) ? two.1 : one.1
                    let answer = try await Self.update(client, key: key, stop: stop)
                    priorities.append(answer.json["budget"]?["priority"]?.intValue ?? 0)
                }
                #expect(priorities == [10, 10, 10, 5, 5, 5], "one budget, counted by both")
            }
        }
    }
}
