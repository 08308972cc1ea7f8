import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import HeraldWebhooks
import Testing

@testable import HeraldServer

/// Live Activity starts on push-to-start tokens, paced per app (`HERALD_PUSH_TO_START_RATE`) through the store, on
/// injected clocks: a second passes only when the test says so.
@Suite("Live Activities: the push-to-start pace", .timeLimit(.minutes(2)))
struct PushToStartPaceTests {
    /// On a whole second, so the pace's seconds are the clock's.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    /// Registers `count` push-to-start tokens of `DeliveryAttributes` for one user, each on its own installation.
    static func startTokens(_ client: ServerClient, user: String, first: Int, count: Int) async throws
        -> [DeviceToken]
    {
        var tokens: [DeviceToken] = []
        for offset in 0..<count {
            let token = testToken(first + offset)
            try await client.register(
                token, debug: true,
                extra: #", "userId": "\#(user)", "installationId": "\#(UUID())", "tokenKind": "liveactivity-start", "activityType": "DeliveryAttributes""#)
            tokens.append(token)
        }
        return tokens
    }

    static func startActivity(_ client: ServerClient, key: String, id: String, user: String) async throws
        -> ServerClient.Answer
    {
        try await client.call(
            .post, "/api/activities",
            body: #"{"activityId": "\#(id)", "activityType": "DeliveryAttributes", "target": {"user": "\#(user)"}, "attributes": {}, "contentState": {"stop": 1}, "alert": "On its way"}"#,
            bearer: key)
    }

    /// What the app's pace granted in the second of `date`, by every send: a take of nothing reads it.
    static func sent(_ store: any Store, in date: Date) async throws -> Int {
        try await store.takePushToStartPace(topic: ServerHarness.topic, wanted: 0, perSecond: 1, at: date).sentThisSecond
    }

    /// Waits until `count` takes have found their second spent and sleep until the next one (webhook delivery, whose
    /// idle looks also sleep a second, is off in these tests).
    static func waitForWaits(_ sleep: ManualClock, _ count: Int) async throws {
        try #require(await sleep.waitForRequestedSleeps(where: { $0.filter { $0 == .seconds(1) }.count >= count }) != nil)
    }

    @Test(
        "a start to five push-to-start tokens at 2 a second goes 2, 2 and 1 as seconds pass; the answer, the send and /metrics say so",
        arguments: Backend.available)
    func paced(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        let sleep = ManualClock()
        try await ServerHarness.withServer(
            backend, clock: wall, sleepClock: sleep, configure: { $0.liveActivities.pushToStartRate = 2; $0.webhooks.enabled = false }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let tokens = try await Self.startTokens(client, user: "alice", first: 0x40, count: 5)

            let answer = try await Self.startActivity(client, key: key, id: "order-1", user: "alice")
            #expect(answer.status == .accepted && answer.json["status"] == "queued", "a paced start runs in the background: \(answer)")
            #expect(answer.json["pushToStartPace"]?["perSecond"] == 2 && answer.json["pushToStartPace"]?["minimumSeconds"] == 3)
            #expect(answer.json["activity"]?["status"] == "active")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))

            try await Self.waitForWaits(sleep, 1)
            #expect(try await Self.sent(app.store, in: Self.start) == 2, "two in the first second, then it waits")
            wall.advance(by: .seconds(1))
            sleep.advance(by: .seconds(1))
            try await Self.waitForWaits(sleep, 2)
            #expect(try await Self.sent(app.store, in: wall.now()) == 2, "two more in the next one")
            wall.advance(by: .seconds(1))
            sleep.advance(by: .seconds(1))

            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.status == .completed && finished.counts.accepted == 5, "\(finished)")
            #expect(try await Self.sent(app.store, in: wall.now()) == 1, "the last one in the third second")
            for token in tokens { #expect(try emulator.inbox(for: token).count == 1, "each device started once") }

            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains(#"herald_push_to_start_paced_total{app="\#(ServerHarness.topic)"} 5"#),
                "\(metrics.body.split(separator: "\n").filter { $0.contains("push_to_start") })")
            #expect(metrics.body.contains(#"herald_push_to_start_pace_waits_total{app="\#(ServerHarness.topic)"} 2"#))
        }
    }

    @Test("two starts of one app share its pace: together they send no more than the rate in a second", arguments: Backend.available)
    func sharedBySends(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        let sleep = ManualClock()
        try await ServerHarness.withServer(
            backend, clock: wall, sleepClock: sleep, configure: { $0.liveActivities.pushToStartRate = 3; $0.webhooks.enabled = false }
        ) { client, app in
            let key = try await SendTests.key(app)
            _ = try await Self.startTokens(client, user: "alice", first: 0x50, count: 3)
            _ = try await Self.startTokens(client, user: "bob", first: 0x60, count: 3)
            let first = try await Self.startActivity(client, key: key, id: "order-1", user: "alice")
            let second = try await Self.startActivity(client, key: key, id: "order-2", user: "bob")
            let ids = try [first, second].map { try #require($0.json["id"]?.stringValue.flatMap(SendID.init)) }

            // Six starts at three a second: whichever send finds the second spent waits for the next one.
            try await Self.waitForWaits(sleep, 1)
            #expect(try await Self.sent(app.store, in: Self.start) == 3)
            wall.advance(by: .seconds(1))
            // The other send may find the first second spent only now, and sleep after this advance: time keeps
            // moving for each sleep asked for until both sends are done.
            try await sleep.advancing(by: .seconds(1)) {
                for id in ids {
                    let finished = try await app.worker.waitUntilFinished(id)
                    #expect(finished.status == .completed && finished.counts.accepted == 3, "\(finished)")
                }
            }
            #expect(try await Self.sent(app.store, in: wall.now()) == 3, "the other three went in the next second")
        }
    }

    @Test("unpaced (the default), a start to a few devices is sent while the caller waits, as before")
    func unpaced() async throws {
        try await ServerHarness.withServer { client, app in
            #expect(ServerConfiguration.LiveActivities().pushToStartRate == 0, "unpaced by default")
            let key = try await SendTests.key(app)
            _ = try await Self.startTokens(client, user: "alice", first: 0x70, count: 3)
            let answer = try await Self.startActivity(client, key: key, id: "order-1", user: "alice")
            #expect(answer.status == .ok && answer.json["counts"]?["accepted"] == 3, "\(answer)")
            #expect(answer.json["pushToStartPace"] == nil)
        }
    }
}
