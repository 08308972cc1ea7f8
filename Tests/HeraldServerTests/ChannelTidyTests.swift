import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Broadcast channels kept tidy (docs/live-activities.md, "Channels kept tidy"): counted per app and environment,
/// and, when the tidy is on, deleted on APNs (the in-process emulator) and here once no running activity follows them
/// and either their activities all ended or they went unused; on an injected clock.
@Suite("Broadcast channels: counted and kept tidy", .timeLimit(.minutes(2)))
struct ChannelTidyTests {
    static func create(_ client: ServerClient, key: String) async throws -> String {
        let created = try await client.call(
            .post, "/api/channels", body: #"{"environment": "production", "storagePolicy": 0}"#, bearer: key)
        #expect(created.status == .created, "\(created)")
        return try #require(created.json["channel"]?["id"]?.stringValue)
    }

    static func start(_ client: ServerClient, key: String, id: String, following channel: String) async throws {
        let started = try await client.call(
            .post, "/api/activities",
            body: #"{"activityId": "\#(id)", "activityType": "MatchAttributes", "target": {"user": "fans"}, "attributes": {}, "contentState": {"score": "0-0"}, "alert": {"title": "Kick-off"}, "inputPushChannel": "\#(channel)"}"#,
            bearer: key)
        #expect(started.status == .ok || started.status == .accepted, "\(started)")
    }

    @Test(
        "with the tidy on: a channel whose activities all ended and one unused for its time are deleted on APNs and here, audited; one a running activity follows and one used lately stay; /metrics counts them",
        arguments: Backend.available)
    func tidy(backend: Backend) async throws {
        let wall = ManualWallClock(Date(timeIntervalSince1970: 1_767_225_600))
        try await ServerHarness.withServer(
            backend, clock: wall,
            configure: {
                $0.liveActivities.channelTidy = true
                $0.liveActivities.channelUnusedAfter = 3600
            }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await client.register(
                testToken(0xc1), debug: false,
                extra: #", "userId": "fans", "installationId": "\#(UUID())", "tokenKind": "liveactivity-start", "activityType": "MatchAttributes""#)
            let (ended, unused, followed, used) = (
                try await Self.create(client, key: key), try await Self.create(client, key: key),
                try await Self.create(client, key: key), try await Self.create(client, key: key)
            )
            try await Self.start(client, key: key, id: "match-ended", following: ended)
            try await Self.start(client, key: key, id: "match-running", following: followed)
            let end = try await client.call(.delete, "/api/activities/match-ended", bearer: key)
            #expect(end.status == .ok, "\(end)")

            wall.advance(by: .seconds(3000))
            let broadcast = try await client.call(
                .post, ChannelTests.path(used, "/broadcast"), body: #"{"contentState": {"score": "1-0"}}"#, bearer: key)
            #expect(broadcast.status == .ok, "\(broadcast)")
            wall.advance(by: .seconds(601))

            let report = try await app.channelTidy.runOnce()
            #expect(report.counts == [LiveChannelCount(topic: ServerHarness.topic, environment: .production, count: 4)])
            #expect(report.deleted == [ended, unused].sorted() && report.failed.isEmpty, "\(report)")
            #expect(Set(emulator.channels().map(\.id)) == [followed, used], "deleted on APNs")
            for id in [ended, unused] {
                let shown = try await client.call(.get, ChannelTests.path(id), bearer: key)
                #expect(shown.json["status"] == "deleted", "\(shown)")
            }
            let audit = try await app.store.auditEntries(AuditQuery(action: .channelDeleted), after: nil, limit: 10)
            #expect(audit.entries.count == 2 && audit.entries.allSatisfy { $0.actor.kind == .server && $0.actor.name == "herald (channel tidy)" })

            let again = try await app.channelTidy.runOnce()
            #expect(again.counts.first?.count == 2 && again.deleted.isEmpty, "nothing more to tidy: \(again)")
            var browser = ConsoleClient(client)
            try await browser.signIn(try await ConsoleSessionTests.adminKey(app))
            let page = try await browser.call(.get, "/console/channels")
            #expect(page.body.contains(">production: 2 of ") && page.body.contains(">development: 0 of "), "\(page.body)")
            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains(#"herald_channels{app="\#(ServerHarness.topic)",environment="production"} 2"#),
                "\(metrics.body.split(separator: "\n").filter { $0.contains("herald_channels") })")
        }
    }

    @Test("with the tidy off (the default), a pass counts the channels and deletes none", arguments: [Backend.sqlite])
    func off(backend: Backend) async throws {
        let wall = ManualWallClock(Date(timeIntervalSince1970: 1_767_225_600))
        try await ServerHarness.withServer(backend, clock: wall) { client, app in
            let key = try await SendTests.key(app)
            _ = try await Self.create(client, key: key)
            wall.advance(by: .seconds(30 * 86_400))
            let report = try await app.channelTidy.runOnce()
            #expect(report.counts.first?.count == 1 && report.deleted.isEmpty)
        }
    }
}
