import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// What the device knows about Live Activities, the server uses (docs/live-activities.md, "What the device says"):
/// a token whose device reported Live Activities off gets no Live Activity push and is counted under `suppressed`; one
/// whose person turned frequent updates off gets a priority-10 update at priority 5.
@Suite("Live Activities: the device's settings", .timeLimit(.minutes(2)))
struct ActivityAuthorizationTests {
    static func register(
        _ client: ServerClient, _ token: DeviceToken, kind: String, _ fields: String
    ) async throws {
        try await client.register(
            token, debug: true, extra: #", "userId": "fans", "installationId": "\#(UUID())", "tokenKind": "\#(kind)"\#(fields)"#)
    }

    @Test(
        "an update skips the token of a device with Live Activities off (suppressed.activitiesDisabled) and goes at priority 5 where frequent updates are off; a start skips such push-to-start tokens too",
        arguments: Backend.available)
    func settingsApplied(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let (plain, disabled, infrequent) = (testToken(0xa1), testToken(0xa2), testToken(0xa3))
            try await Self.register(client, plain, kind: "liveactivity", #", "activityId": "game-1""#)
            try await Self.register(
                client, disabled, kind: "liveactivity", #", "activityId": "game-1", "activitiesEnabled": false"#)
            let answer = try await client.register(
                infrequent, debug: true,
                extra: #", "installationId": "\#(UUID())", "tokenKind": "liveactivity", "activityId": "game-1", "activitiesEnabled": true, "frequentPushesEnabled": false"#)
            #expect(answer.json["frequentPushesEnabled"] == false && answer.json["activitiesEnabled"] == true, "\(answer)")
            #expect(try await app.store.device(disabled)?.activitiesEnabled == false)
            _ = try await app.store.createActivity(
                NewActivity(topic: ServerHarness.topic, id: "game-1", activityType: "MatchAttributes"))

            let update = try await client.call(
                .patch, "/api/activities/game-1", body: #"{"contentState": {"score": "1-0"}, "alert": {"title": "Goal"}}"#,
                bearer: key)
            #expect(update.status == .ok, "\(update)")
            #expect(update.json["counts"]?["accepted"] == 2, "\(update)")
            #expect(update.json["suppressed"]?["activitiesDisabled"] == 1, "\(update)")
            #expect(try emulator.inbox(for: plain).map(\.priority) == [10])
            #expect(try emulator.inbox(for: infrequent).map(\.priority) == [5], "frequent updates off: priority 5")
            #expect((try? emulator.inbox(for: disabled)) ?? [] == [], "Live Activities off: nothing sent")

            // An end is not an update: it goes at 10 to every device that allows Live Activities.
            let end = try await client.call(.delete, "/api/activities/game-1", bearer: key)
            #expect(end.status == .ok && end.json["counts"]?["accepted"] == 2, "\(end)")
            #expect(try emulator.inbox(for: infrequent).map(\.priority) == [5, 10])

            // A start skips push-to-start tokens whose device has Live Activities off.
            try await Self.register(client, testToken(0xb1), kind: "liveactivity-start", #", "activityType": "MatchAttributes""#)
            try await Self.register(
                client, testToken(0xb2), kind: "liveactivity-start",
                #", "activityType": "MatchAttributes", "activitiesEnabled": false"#)
            let start = try await client.call(
                .post, "/api/activities",
                body: #"{"activityId": "game-2", "activityType": "MatchAttributes", "target": {"user": "fans"}, "attributes": {}, "contentState": {"score": "0-0"}, "alert": {"title": "Kick-off"}}"#,
                bearer: key)
            #expect(start.json["targetCount"] == 1 && start.json["suppressed"]?["activitiesDisabled"] == 1, "\(start)")

            let dryRun = try await client.call(
                .post, "/api/send?dryRun=true",
                body: #"{"target": {"user": "fans"}, "pushType": "liveactivity", "activityType": "MatchAttributes", "payload": {"aps": {"event": "start", "timestamp": 1767225600, "attributes-type": "MatchAttributes", "attributes": {}, "content-state": {}, "alert": {"title": "x", "body": "y"}}}}"#,
                bearer: key)
            #expect(dryRun.json["suppressed"]?["activitiesDisabled"] == 1, "the dry run says so too: \(dryRun)")
        }
    }
}
