import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// A queued send runs as it was accepted, whatever changed in the configuration meanwhile; jobs stored by an older
/// server (the request body, version 1) still run; a job from a newer server fails with a message that says so.
@Suite("Sends: a queued send runs as accepted", .timeLimit(.minutes(2)))
struct QueuedSendTests {
    /// Queues a send (the typed fields `send`, to user dana at 01:00) on a server configured by `before`, stops it,
    /// starts another on the same database configured by `after` at 01:00, and runs `check` with the send once that
    /// server has finished it.
    private func queueThenRestart(
        _ backend: Backend, token: DeviceToken, send: String, before: (inout ServerConfiguration) -> Void,
        after: (inout ServerConfiguration) -> Void,
        check: @escaping @Sendable (SendRecord, HeraldApplication) async throws -> Void
    ) async throws {
        try await TestDatabase.with(backend) { databaseURL in
            let wall = ManualWallClock(ScheduleTests.start)
            let first = try await ServerHarness.build(databaseURL: databaseURL, clock: wall, logger: nil, configure: before)
            let id = try await first.test(.router) { test in
                let client = ServerClient(client: test)
                try await client.register(token, debug: true, extra: #", "userId": "dana""#)
                let answer = try await client.call(
                    .post, "/api/send",
                    body: #"{"target": {"user": "dana"}, "sendAt": "2026-01-01T01:00:00Z", \#(send)}"#,
                    bearer: try await SendTests.key(first))
                #expect(answer.status == .accepted, "\(answer)")
                await first.worker.waitUntilIdle()
                #expect(first.emulator?.device(token) == nil, "nothing before its time")
                return try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            }
            wall.set(to: ScheduleTests.start.addingTimeInterval(3600))
            let second = try await ServerHarness.build(databaseURL: databaseURL, clock: wall, logger: nil, configure: after)
            try await second.test(.router) { _ in
                try await check(try await second.worker.waitUntilFinished(id), second)
            }
        }
    }

    @Test(
        "a send queued with receipts on and encrypted under k1 goes out so after a restart with receipts off and key k2",
        arguments: Backend.available)
    func acceptedBeforeConfigurationChange(backend: Backend) async throws {
        let (k1, k2) = (try ContentEncryptionKey.generate(id: "k1"), try ContentEncryptionKey.generate(id: "k2"))
        let token = testToken(0x91)
        try await queueThenRestart(
            backend, token: token, send: #""alert": {"title": "Secret", "body": "meet at 9"}, "encrypt": true"#,
            before: { configuration in
                configuration.apps[0].contentKey = k1
                configuration.apps[0].receipts = true
            },
            after: { configuration in
                configuration.apps[0].contentKey = k2
                configuration.apps[0].receipts = false
            }
        ) { finished, server in
            #expect(finished.status == .completed && finished.counts.accepted == 1, "\(finished)")
            let inbox = try #require(server.emulator).inbox(for: token)
            #expect(inbox.count == 1)
            let received = try Payload(jsonBytes: try #require(inbox.first).payload)
            #expect(
                received.custom[SendPlan.receiptKey] == .object(["send": .string(finished.id.description)]),
                "the receipt key of a send accepted with receipts on: \(received.custom.keys.sorted())")
            #expect(received.hasEncryptedContent && received.aps.alert == .content(Payload.defaultEncryptedPlaceholder))
            let opened = try? received.decryptingContent(using: [k1])
            #expect(
                opened?.aps.alert == .content(AlertContent(title: "Secret", body: "meet at 9")),
                "sealed with k1, the key of the moment it was accepted")
            #expect((try? received.decryptingContent(using: [k2])) == nil, "not with k2, configured after")
        }
    }

    @Test(
        "a send queued for an app the restarted server no longer serves fails with why, and sends nothing",
        arguments: Backend.available)
    func appRemoved(backend: Backend) async throws {
        let token = testToken(0x94)
        try await queueThenRestart(
            backend, token: token, send: #""alert": "hi""#, before: { _ in },
            after: { $0.apps = [AppConfiguration(bundleID: "com.example.other")] }
        ) { finished, server in
            #expect(finished.status == .failed && finished.counts.total == 0, "\(finished)")
            #expect(
                finished.message?.hasPrefix(
                    "This server no longer serves com.example.app (it has no APNs credentials for it)") == true,
                "\(finished.message ?? "no message")")
            #expect(server.emulator?.device(token) == nil, "nothing sent")
        }
    }

    @Test("a version-1 job (the request body) stored by an older server still runs", arguments: Backend.available)
    func versionOneSend(backend: Backend) async throws {
        let id = SendID()
        let token = testToken(0x92)
        try await ServerHarness.withServer(
            backend,
            prepare: { store in
                _ = try await store.upsert(
                    TokenRegistration(
                        token: token, topic: ServerHarness.topic, environment: .development, userID: "erin"))
                let job = #"{"target": {"user": "erin"}, "topic": "com.example.app", "alert": "from an older server"}"#
                _ = try await store.createSend(
                    NewSend(id: id, target: "user erin", summary: "alert push", job: job, targetCount: 1))
            }
        ) { _, app in
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.status == .completed && finished.counts.accepted == 1, "\(finished)")
            let inbox = try #require(app.emulator).inbox(for: token)
            #expect(inbox.count == 1)
            let received = try Payload(jsonBytes: try #require(inbox.first).payload)
            #expect(received.aps.alert == .body("from an older server"))
            #expect(received.custom[SendPlan.receiptKey] == .object(["send": .string(id.description)]))
        }
    }

    @Test("a version-1 scheduled broadcast stored by an older server still fires at its time")
    func versionOneBroadcast() async throws {
        let wall = ManualWallClock(ScheduleTests.start)
        try await ServerHarness.withServer(clock: wall) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let created = try await client.call(
                .post, "/api/channels", body: #"{"environment": "production", "storagePolicy": 1}"#, bearer: key)
            let channel = try #require(created.json["channel"]?["id"]?.stringValue, "\(created)")
            let subscriber = testToken(0x93)
            _ = try emulator.createDevice(token: subscriber, environment: .production, topic: ServerHarness.topic)
            try emulator.subscribe(subscriber, to: channel)
            let id = SendID()
            let job =
                #"{"broadcast": {"contentState": {"score": "2-1"}, "sendAt": "2026-01-01T01:00:00Z", "channel": "\#(channel)"}}"#
            _ = try await app.store.createSend(
                NewSend(
                    id: id, target: "channel \(channel) (production)", summary: "liveactivity broadcast (update)",
                    job: job, status: .queued, targetCount: 1,
                    sendAt: ScheduleTests.start.addingTimeInterval(3600), lane: .broadcast))
            wall.advance(by: .seconds(3600))
            app.worker.wake()
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.status == .completed && finished.counts.accepted == 1, "\(finished)")
            let entry = try #require(try emulator.inbox(for: subscriber).first)
            let aps = try #require(try JSONValue(parsing: entry.payload)["aps"])
            #expect(aps["content-state"]?["score"] == "2-1")
            #expect(aps["timestamp"] == .integer(Int(ScheduleTests.start.timeIntervalSince1970) + 3600), "\(aps)")
        }
    }

    @Test("a job written by a newer server fails its send with a message that says to upgrade, and sends nothing")
    func newerJob() async throws {
        let id = SendID()
        try await ServerHarness.withServer(
            prepare: { store in
                _ = try await store.createSend(
                    NewSend(
                        id: id, target: "user frank", summary: "alert push",
                        job: #"{"v": 3, "kind": "send", "app": "com.example.app"}"#, targetCount: 1))
            }
        ) { _, app in
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.status == .failed && finished.counts.total == 0, "\(finished)")
            #expect(
                finished.message
                    == "The stored job of send \(id) is version 3, newer than this server (reads up to 2): upgrade the server that runs it.",
                "\(finished.message ?? "no message")")
        }
    }
}
