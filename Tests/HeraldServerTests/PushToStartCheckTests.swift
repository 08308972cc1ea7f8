import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import HeraldWebhooks
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// Push-to-start tokens that start nothing (docs/live-activities.md): APNs accepts every push-to-start, the emulator's
/// devices start the activity or ignore it, the test plays each started device's app (it registers the activity's
/// update token, as the SDK does), and the check counts, traces and marks stale — end to end, on injected clocks.
@Suite("Live Activities: push-to-start tokens that start nothing", .timeLimit(.minutes(3)))
struct PushToStartCheckTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)
    static let checkAfter = 600

    /// One device of the test: its push-to-start token, on its own installation.
    struct Device: Hashable {
        var token: DeviceToken
        var installation: UUID
    }

    static func registerStartToken(_ client: ServerClient, _ device: Device) async throws {
        try await client.register(
            device.token, debug: true,
            extra: #", "userId": "fans", "installationId": "\#(device.installation)", "tokenKind": "liveactivity-start", "activityType": "MatchAttributes""#)
    }

    /// Starts an activity on every push-to-start token of the user and waits for its send to end.
    static func startActivity(_ client: ServerClient, _ app: HeraldApplication, key: String, id: String) async throws
        -> SendRecord
    {
        let answer = try await client.call(
            .post, "/api/activities",
            body: #"{"activityId": "\#(id)", "activityType": "MatchAttributes", "target": {"user": "fans"}, "attributes": {"home": "A", "away": "B"}, "contentState": {"score": "0-0"}, "alert": {"title": "Kick-off"}}"#,
            bearer: key)
        try #require(answer.status == .ok || answer.status == .accepted, "\(answer)")
        let sendID = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
        return try await app.worker.waitUntilFinished(sendID)
    }

    /// Plays the app of every device the activity started on: it registers the activity's update token.
    static func appsRegisterUpdateTokens(
        _ client: ServerClient, _ emulator: APNSEmulator, since count: Int, activity: String, devices: [DeviceToken: Device]
    ) async throws -> Int {
        let started = emulator.startedActivities().dropFirst(count)
        for (offset, activityStarted) in started.enumerated() {
            let device = try #require(devices[activityStarted.token])
            let update = StoreConformance.token(50_000 + count + offset)
            try await client.register(
                update, debug: true,
                extra: #", "userId": "fans", "installationId": "\#(device.installation)", "tokenKind": "liveactivity", "activityId": "\#(activity)""#)
        }
        return started.count
    }

    @Test(
        "100 push-to-start tokens, 20 of whose devices ignore starts: 20 notStarted, stale after 2 in a row, left out of the next start, back with a new token",
        arguments: Backend.available)
    func staleTokens(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(
            backend, clock: wall,
            configure: {
                $0.liveActivities.startCheckAfter = Self.checkAfter
                $0.liveActivities.staleAfter = 2
                $0.webhooks.enabled = false
            }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            _ = try await app.store.createWebhookEndpoint(
                NewWebhookEndpoint(
                    app: ServerHarness.topic, url: "https://hooks.example.com/herald", events: [.tokenStale],
                    secret: "whsec_" + String(repeating: "s", count: 32)))
            var devices: [DeviceToken: Device] = [:]
            var ignoring: [Device] = []
            for index in 0..<100 {
                let device = Device(token: StoreConformance.token(10_000 + index), installation: UUID())
                devices[device.token] = device
                _ = try emulator.createDevice(
                    token: device.token, environment: .development, topic: ServerHarness.topic + ".push-type.liveactivity")
                if index % 5 == 0 {
                    try emulator.setStartsActivities(device.token, false)
                    ignoring.append(device)
                }
                try await Self.registerStartToken(client, device)
            }

            // The first start: 80 devices start it and their apps register update tokens; 20 do not.
            let first = try await Self.startActivity(client, app, key: key, id: "match-1")
            #expect(first.counts.accepted == 100, "APNs accepts every push-to-start: \(first)")
            #expect(try await Self.appsRegisterUpdateTokens(client, emulator, since: 0, activity: "match-1", devices: devices) == 80)
            #expect(emulator.counters.pushToStartsIgnored == 20)

            let early = try await app.pushToStartChecks.checkDue()
            #expect(early.activities == 0, "the devices still have their time")
            wall.advance(by: .seconds(Self.checkAfter))
            let checked = try await app.pushToStartChecks.checkDue()
            #expect(checked.activities == 1 && checked.started == 80 && checked.notStarted == 20 && checked.unjudged == 0, "\(checked)")
            #expect(checked.newlyStale.isEmpty, "one miss is not yet stale")
            #expect(try await app.pushToStartChecks.checkDue().activities == 0, "an activity is checked once")

            let activity = try await client.call(.get, "/api/activities/match-1", bearer: key)
            #expect(activity.json["startCheck"]?["started"] == 80 && activity.json["startCheck"]?["notStarted"] == 20, "\(activity)")
            let missed = try await DeliveryTraceTests.trace(client, send: first.id.description, ignoring[0].token, key: key)
            #expect(missed["verdict"]?["code"] == "activityNotStarted", "\(missed)")
            #expect(DeliveryTraceTests.events(missed).contains("activityNotStarted"))
            let startedToken = try #require(devices.values.first { !ignoring.contains($0) }).token
            let hit = try await DeliveryTraceTests.trace(client, send: first.id.description, startedToken, key: key)
            #expect(hit["verdict"]?["code"] == "activityStarted", "\(hit)")

            // The second start: the same 20 miss again, the second in a row, and are marked stale.
            let second = try await Self.startActivity(client, app, key: key, id: "match-2")
            #expect(second.counts.accepted == 100)
            #expect(try await Self.appsRegisterUpdateTokens(client, emulator, since: 80, activity: "match-2", devices: devices) == 80)
            wall.advance(by: .seconds(Self.checkAfter))
            let again = try await app.pushToStartChecks.checkDue()
            #expect(again.started == 80 && again.notStarted == 20)
            #expect(Set(again.newlyStale) == Set(ignoring.map(\.token)), "stale after two misses in a row")
            let stale = try #require(try await app.store.device(ignoring[0].token))
            #expect(stale.staleSince == wall.now() && !stale.isActive)
            let batch = try #require(
                try await app.store.claimWebhookBatch(worker: "test", leaseUntil: wall.now().addingTimeInterval(60), limit: 100))
            #expect(batch.events.count == 20 && batch.events.allSatisfy { $0.type == .tokenStale }, "\(batch.events.map(\.type))")
            let metrics = try await client.call(.get, "/metrics")
            #expect(metrics.body.contains(#"herald_push_to_start_tokens_stale_total{app="\#(ServerHarness.topic)"} 20"#))
            #expect(metrics.body.contains(#"herald_push_to_start_checked_total{app="\#(ServerHarness.topic)",result="notStarted"} 40"#))

            // The console shows the stale token and the activity's starts.
            var browser = ConsoleClient(client)
            try await browser.signIn(try await ConsoleSessionTests.adminKey(app))
            let devicePage = try await browser.call(.get, "/console/devices/\(ignoring[0].token.hex)")
            #expect(devicePage.status == .ok && devicePage.body.contains("stale: left out of sends"), "\(devicePage.body)")
            let activities = try await browser.call(.get, "/console/activities")
            let row = try #require(ConsoleActivityPageTests.row(activities.body, "match-2"))
            #expect(row.contains("80 started · 20 not"), "\(row)")

            // The third start leaves the stale tokens out.
            let third = try await Self.startActivity(client, app, key: key, id: "match-3")
            #expect(third.targetCount == 80 && third.counts.accepted == 80, "\(third)")
            #expect(try await Self.appsRegisterUpdateTokens(client, emulator, since: 160, activity: "match-3", devices: devices) == 80)

            // A new push-to-start token from one of the stale installations brings that device back.
            let renewed = Device(token: StoreConformance.token(20_000), installation: ignoring[0].installation)
            devices[renewed.token] = renewed
            _ = try emulator.createDevice(
                token: renewed.token, environment: .development, topic: ServerHarness.topic + ".push-type.liveactivity")
            try await Self.registerStartToken(client, renewed)
            #expect(try await app.store.device(ignoring[0].token) == nil, "the new token replaced the stale one")
            let fourth = try await Self.startActivity(client, app, key: key, id: "match-4")
            #expect(fourth.targetCount == 81 && fourth.counts.accepted == 81, "\(fourth)")
        }
    }

    @Test("a start whose check is off records nothing to check", arguments: [Backend.sqlite])
    func checkOff(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: { $0.liveActivities.startCheckAfter = 0 }) { client, app in
            let key = try await SendTests.key(app)
            try await Self.registerStartToken(client, Device(token: StoreConformance.token(30_000), installation: UUID()))
            _ = try await Self.startActivity(client, app, key: key, id: "match-1")
            #expect(try await app.store.activityStartsDue(endedBy: .distantFuture, limit: 10).isEmpty)
            #expect(try await app.pushToStartChecks.checkDue() == PushToStartChecks.Report())
        }
    }
}
