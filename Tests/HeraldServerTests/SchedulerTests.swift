import Foundation
import HTTPTypes
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import HeraldServer

/// The send scheduler: many sends at once on one instance, in lanes, sharing one in-flight budget fairly.
@Suite("Server: send scheduler", .timeLimit(.minutes(3)))
struct SchedulerTests {
    static let alpha = "com.alpha.app"
    static let beta = "com.beta.app"

    static func register(_ store: any Store, _ range: ClosedRange<Int>, topic: String, user: String? = nil)
        async throws
    {
        try await DeviceSeeding.register(
            range.map { n in
                TokenRegistration(token: StoreConformance.token(n), topic: topic, environment: .development, userID: user)
            }, in: store)
    }

    @Test(
        "a send to one user's devices completes while a paced campaign holds its lane: no send waits for another",
        arguments: Backend.available)
    func noHeadOfLineBlocking(backend: Backend) async throws {
        // The campaign's pace waits on this clock, which never moves by itself: it stays running for the whole test.
        let paceClock = ManualClock()
        try await ServerHarness.withServer(
            backend, sleepClock: paceClock,
            configure: {
                $0.limits.inlineSendLimit = 3
                // One campaign at a time: the second waits for the first's slot, the user's send does not.
                $0.sending.runningSendsPerLane = 1
            }
        ) { client, app in
            let key = try await SendTests.key(app)
            try await Self.register(app.store, 1...20, topic: ServerHarness.topic)
            try await Self.register(app.store, 101...105, topic: ServerHarness.topic, user: "u1")
            let campaign = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"topic": "com.example.app"}, "alert": "campaign", "rate": 1}"#, bearer: key)
            #expect(campaign.status == .accepted && campaign.json["lane"]?.stringValue == "campaign", "\(campaign)")
            let secondCampaign = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"topic": "com.example.app"}, "alert": "second campaign", "rate": 5}"#, bearer: key)
            let order = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u1"}, "alert": "your order shipped"}"#, bearer: key)
            #expect(order.status == .accepted && order.json["lane"]?.stringValue == "background", "\(order)")
            let campaignID = try #require(SendID(campaign.json["id"]?.stringValue ?? ""))
            let orderID = try #require(SendID(order.json["id"]?.stringValue ?? ""))

            // Before the scheduler, the worker performed the campaign first and this wait ended at the time limit.
            let finished = try await app.worker.waitUntilFinished(orderID)
            #expect(finished.status == .completed && finished.counts.accepted == 5)
            let running = try await client.call(.get, "/api/sends/\(campaignID)", bearer: key)
            #expect(running.json["status"]?.stringValue == "running", "\(running)")
            #expect(running.json["worker"]?.stringValue?.hasPrefix(app.worker.instance + "/") == true)
            #expect((running.json["counts"]?["accepted"]?.intValue ?? 99) < 20, "the campaign is still paced")
            let secondID = try #require(SendID(secondCampaign.json["id"]?.stringValue ?? ""))
            #expect(try await app.store.send(secondID)?.status == .queued, "the campaign lane is full")
            await app.worker.waitUntilLookedAgain()
            let metrics = try await client.call(.get, "/metrics").body
            #expect(metrics.contains(#"herald_sends_running{lane="campaign"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"herald_sends_running{lane="background"} 0"#))
            #expect(metrics.contains(#"herald_sends_waiting{lane="campaign"} 1"#))
            #expect(metrics.contains(#"herald_send_claims_total{lane="background",kind="send",resumed="false"} 1"#))
            #expect(metrics.contains("herald_send_budget_total 1000"))
            #expect(try await client.call(.delete, "/api/sends/\(secondID)", bearer: key).status == .ok)

            // Cancelled, the campaign stops at its next start (the pace clock's next tick).
            #expect(try await client.call(.delete, "/api/sends/\(campaignID)", bearer: key).status == .ok)
            await paceClock.waitForSleepers()
            paceClock.advance(by: .seconds(1))
            let cancelled = try await app.worker.waitUntilFinished(campaignID)
            #expect(cancelled.status == .cancelled)
        }
    }

    @Test(
        "when a lane's slot frees, a high-priority app's waiting send goes before an older one of a normal app",
        arguments: Backend.available)
    func priorityBetweenApps(backend: Backend) async throws {
        let paceClock = ManualClock()
        try await ServerHarness.withServer(
            backend, sleepClock: paceClock,
            configure: {
                var urgent = AppConfiguration(bundleID: Self.beta)
                urgent.sendPriority = .high
                $0.apps = [AppConfiguration(bundleID: Self.alpha), urgent]
                $0.limits.inlineSendLimit = 3
                $0.sending.runningSendsPerLane = 1
            }
        ) { client, app in
            let key = try await SendTests.key(app)
            try await Self.register(app.store, 1...20, topic: Self.alpha)
            try await Self.register(app.store, 1001...1020, topic: Self.beta)
            func campaign(_ topic: String) async throws -> SendID {
                let answer = try await client.call(
                    .post, "/api/send", body: #"{"target": {"topic": "\#(topic)"}, "alert": "news", "rate": 1}"#,
                    bearer: key)
                #expect(answer.status == .accepted && answer.json["lane"]?.stringValue == "campaign", "\(answer)")
                return try #require(SendID(answer.json["id"]?.stringValue ?? ""))
            }
            let holding = try await campaign(Self.alpha)
            await app.worker.waitUntilLookedAgain()
            #expect(try await app.store.send(holding)?.status == .running)
            let older = try await campaign(Self.alpha)
            let urgent = try await campaign(Self.beta)
            await app.worker.waitUntilLookedAgain()
            #expect(try await app.store.send(older)?.status == .queued, "the lane is full")

            // The holding campaign is cancelled and stops at its pace's next tick: its slot frees.
            #expect(try await client.call(.delete, "/api/sends/\(holding)", bearer: key).status == .ok)
            await paceClock.waitForSleepers()
            paceClock.advance(by: .seconds(1))
            #expect(try await app.worker.waitUntilFinished(holding).status == .cancelled)
            await app.worker.waitUntilLookedAgain()
            // Oldest first, the normal app's send would run now and the high one's wait.
            #expect(try await app.store.send(urgent)?.status == .running)
            #expect(try await app.store.send(older)?.status == .queued)
            for id in [older, urgent] {
                #expect(try await client.call(.delete, "/api/sends/\(id)", bearer: key).status == .ok)
            }
            // The running one stops at its next tick; the server's shutdown would otherwise wait for it.
            await paceClock.waitForSleepers()
            paceClock.advance(by: .seconds(1))
            #expect(try await app.worker.waitUntilFinished(urgent).status == .cancelled)
        }
    }

    @Test(
        "a worker never claims again a send it is running, even when the wall clock jumps past the send's lease",
        arguments: Backend.available)
    func noSecondRunOfOwnSend(backend: Backend) async throws {
        let paceClock = ManualClock()
        let wall = ManualWallClock()
        try await ServerHarness.withServer(
            backend, clock: wall, sleepClock: paceClock, configure: { $0.limits.inlineSendLimit = 3 }
        ) { client, app in
            let key = try await SendTests.key(app)
            try await Self.register(app.store, 1...20, topic: ServerHarness.topic)
            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"topic": "com.example.app"}, "alert": "paced", "rate": 1}"#,
                bearer: key)
            let id = try #require(SendID(answer.json["id"]?.stringValue ?? ""), "\(answer)")
            await app.worker.waitUntilLookedAgain()
            #expect(try await app.store.send(id)?.status == .running)

            // The run sleeps on its pace; the wall clock jumps past its lease (a suspended machine, a clock step).
            wall.advance(by: .seconds(3_600))
            await app.worker.waitUntilLookedAgain()
            let metrics = try await client.call(.get, "/metrics").body
            // Before, the worker took its own send again as a lease take-over, and both runs sent its devices.
            #expect(metrics.contains(#"herald_send_claims_total{lane="campaign",kind="send",resumed="false"} 1"#), "\(metrics)")
            #expect(!metrics.contains(#"herald_send_claims_total{lane="campaign",kind="send",resumed="true"} 1"#))

            #expect(try await client.call(.delete, "/api/sends/\(id)", bearer: key).status == .ok)
            await paceClock.waitForSleepers()
            paceClock.advance(by: .seconds(1))
            #expect(try await app.worker.waitUntilFinished(id).status == .cancelled)
        }
    }
}
