import Foundation
import HTTPTypes
@testable import HeraldAPNS
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Broadcast channels through the API, in-process: the server, its store and its emulator's channel listeners.
@Suite("Broadcast channels: create, list, broadcast and delete through /api/channels", .timeLimit(.minutes(2)))
struct ChannelTests {
    /// A channel id in a path: base64's `/`, `+` and `=` percent-encoded.
    static func path(_ id: String, _ rest: String = "") -> String {
        "/api/channels/" + (id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id) + rest
    }

    @Test("a storing channel's life: created, two subscribers get each broadcast, deleted, then refused", arguments: Backend.available)
    func life(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let created = try await client.call(
                .post, "/api/channels", body: #"{"environment": "production", "storagePolicy": 1}"#, bearer: key)
            #expect(created.status == .created, "\(created)")
            let id = try #require(created.json["channel"]?["id"]?.stringValue)
            #expect(created.json["channel"]?["storagePolicy"] == 1 && created.json["channel"]?["topic"] == .string(ServerHarness.topic))
            #expect(created.json["channel"]?["environment"] == "production" && created.json["channel"]?["status"] == "live")
            #expect(created.json["apnsRequestId"]?.stringValue?.count == 36)
            #expect(emulator.channels().map(\.id) == [id], "created on the emulator's channel-management listener")

            let devices = [testToken(0x91), testToken(0x92)]
            for token in devices {
                _ = try emulator.createDevice(token: token, environment: .production, topic: ServerHarness.topic)
                try emulator.subscribe(token, to: id)
            }
            let broadcast = try await client.call(
                .post, Self.path(id, "/broadcast"),
                body: #"{"contentState": {"score": "2-1"}, "alert": {"title": "Goal"}, "expiration": 2000000000}"#,
                bearer: key)
            #expect(broadcast.status == .ok && broadcast.json["channel"] == .string(id), "\(broadcast)")
            #expect(broadcast.json["apnsRequestId"]?.stringValue?.count == 36)
            // Recorded as a send: its one request counted, its apns-request-id the send's id.
            let send = try #require(broadcast.json["send"])
            #expect(send["status"] == "completed" && send["counts"]?["accepted"] == 1 && send["targetCount"] == 1, "\(send)")
            #expect(send["target"] == .string("channel \(id) (production)") && send["summary"] == "liveactivity broadcast (update)")
            #expect(send["id"] == broadcast.json["apnsRequestId"])
            #expect(send["message"]?.stringValue?.contains("APNs accepted the broadcast") == true)
            let listed = try await client.call(.get, "/api/sends", bearer: key)
            #expect(listed.json["sends"]?.arrayValue?.first?["id"] == send["id"], "\(listed)")
            for token in devices {
                let inbox = try emulator.inbox(for: token)
                #expect(inbox.count == 1 && inbox.first?.channelID == id, "\(inbox)")
                let entry = try #require(inbox.first)
                let aps = try #require(try JSONValue(parsing: entry.payload)["aps"])
                #expect(aps["event"] == "update" && aps["content-state"]?["score"] == "2-1" && aps["alert"]?["title"] == "Goal")
            }

            let shown = try await client.call(.get, Self.path(id), bearer: key)
            #expect(shown.status == .ok && shown.json["id"] == .string(id) && shown.json["status"] == "live", "\(shown)")
            let deleted = try await client.call(.delete, Self.path(id), bearer: key)
            #expect(deleted.status == .ok && deleted.json["channel"]?["status"] == "deleted", "\(deleted)")
            #expect(deleted.json["channel"]?["deletedAt"] != nil && deleted.json["apnsReason"] == nil)
            #expect(emulator.channels().isEmpty, "deleted on the emulator too")

            let late = try await client.call(
                .post, Self.path(id, "/broadcast"), body: #"{"contentState": {"score": "3-1"}}"#, bearer: key)
            #expect(late.status == .conflict && late.reason == "channelDeleted", "\(late)")
            let again = try await client.call(.delete, Self.path(id), bearer: key)
            #expect(again.status == .conflict && again.reason == "channelDeleted", "\(again)")
            for token in devices { #expect(try emulator.inbox(for: token).count == 1, "nothing more was sent") }
            let stillShown = try await client.call(.get, Self.path(id), bearer: key)
            #expect(stillShown.json["status"] == "deleted", "a deleted channel stays recorded")
        }
    }

    @Test("a channel that stores nothing refuses a non-zero expiration with BadExpirationDate, before anything is sent or recorded")
    func noStorage() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let created = try await client.call(.post, "/api/channels", body: #"{"environment": "development"}"#, bearer: key)
            #expect(created.status == .created && created.json["channel"]?["storagePolicy"] == 0, "\(created)")
            let id = try #require(created.json["channel"]?["id"]?.stringValue)
            let refused = try await client.call(
                .post, Self.path(id, "/broadcast"), body: #"{"contentState": {}, "expiration": 1767300000}"#, bearer: key)
            #expect(refused.status == .badRequest && refused.reason == "BadExpirationDate", "\(refused)")
            #expect(try await app.store.recentSends(after: nil, limit: 10).sends.isEmpty, "refused before sending")
            let accepted = try await client.call(
                .post, Self.path(id, "/broadcast"), body: #"{"event": "end", "expiration": 0, "dismissalDate": 1767300000}"#,
                bearer: key)
            #expect(accepted.status == .ok, "\(accepted)")
        }
    }

    @Test("a channel APNs no longer knows is marked deleted on DELETE or broadcast, and the answer says so")
    func goneOnAPNs() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            // Recorded here but unknown to APNs, as after the broadcast capability was switched off.
            for id in ["Z29uZQ==", "Z29uZTI="] {
                let channel = NewChannel(id: id, topic: ServerHarness.topic, environment: .production, storagePolicy: 0)
                #expect(try await app.store.recordChannel(channel))
            }
            let deleted = try await client.call(.delete, Self.path("Z29uZQ=="), bearer: key)
            #expect(deleted.status == .ok && deleted.json["apnsReason"] == "ChannelNotRegistered", "\(deleted)")
            #expect(deleted.json["channel"]?["status"] == "deleted")
            let broadcast = try await client.call(
                .post, Self.path("Z29uZTI=", "/broadcast"), body: #"{"contentState": {}}"#, bearer: key)
            #expect(broadcast.status == .badRequest && broadcast.reason == "ChannelNotRegistered", "\(broadcast)")
            #expect(try await app.store.channel(id: "Z29uZTI=")?.isLive == false)
            // APNs's refusal is recorded, as a failed send the error names.
            let sends = try await app.store.recentSends(after: nil, limit: 10).sends
            #expect(sends.count == 1 && sends.first?.status == .failed && sends.first?.counts.rejected == 1)
            #expect(sends.first?.message?.contains("ChannelNotRegistered") == true, "\(sends)")
            #expect(broadcast.json["error"]?.stringValue?.contains(sends.first!.id.description) == true, "\(broadcast)")
        }
    }

    @Test("GET /api/channels lists the live channels of an app, per environment, by page")
    func listing() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            var ids: [String: String] = [:]
            for (name, environment) in [("a", "production"), ("b", "production"), ("c", "development")] {
                let created = try await client.call(
                    .post, "/api/channels", body: #"{"environment": "\#(environment)"}"#, bearer: key)
                ids[name] = try #require(created.json["channel"]?["id"]?.stringValue)
            }
            let a = try #require(ids["a"])
            try await client.call(.delete, Self.path(a), bearer: key)
            let production = try await client.call(.get, "/api/channels?environment=production", bearer: key)
            #expect(production.status == .ok && production.json["channels"]?.arrayValue?.map { $0["id"] } == [ids["b"].map(JSONValue.string)], "\(production)")
            let all = try await client.call(.get, "/api/channels", bearer: key)
            #expect(all.json["channels"]?.arrayValue?.count == 2 && all.json["next"] == nil, "\(all)")
            let page = try await client.call(.get, "/api/channels?limit=1", bearer: key)
            let first = try #require(page.json["channels"]?.arrayValue?.first?["id"]?.stringValue)
            #expect(page.json["next"] == .string(first))
            let rest = try await client.call(
                .get, "/api/channels?limit=1&after=" + (first.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? first),
                bearer: key)
            #expect(rest.json["channels"]?.arrayValue?.count == 1 && rest.json["channels"]?.arrayValue?.first?["id"] != .string(first), "\(rest)")
            let unknown = try await client.call(.get, Self.path("bm9uZQ=="), bearer: key)
            #expect(unknown.status == .notFound && unknown.reason == "unknownChannel", "\(unknown)")
        }
    }

    @Test("bad channel requests are 400 naming the field, and create nothing", arguments: [
        (#"{}"#, "environment"),
        (#"{"environment": "staging"}"#, "environment"),
        (#"{"environment": "production", "storagePolicy": 2}"#, "storagePolicy"),
        (#"{"environment": "production", "storagePolicy": "1"}"#, "storagePolicy"),
        (#"{"environment": "production", "colour": 1}"#, "colour"),
        (#"{"environment": "production", "topic": "com.example.unknown"}"#, "com.example.unknown"),
    ])
    func badCreates(_ body: String, field: String) async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let answer = try await client.call(.post, "/api/channels", body: body, bearer: key)
            #expect(answer.status == .badRequest, "\(answer)")
            #expect(answer.json["error"]?.stringValue?.contains(field) == true, "\(answer)")
            #expect(try #require(app.emulator).channels().isEmpty)
        }
    }

    @Test("bad broadcasts are 400 naming the field, and send nothing", arguments: [
        (#"{}"#, "contentState"),
        (#"{"event": "start", "contentState": {}}"#, "event"),
        (#"{"contentState": {}, "priority": 1}"#, "priority"),
        (#"{"contentState": {}, "expiration": -1}"#, "expiration"),
        (#"{"contentState": {}, "dismissalDate": 1767300000}"#, "dismissalDate"),
        (#"{"contentState": {}, "channel": "x"}"#, "channel"),
        (#"{"contentState": {}, "localTime": "2026-12-24T09:00"}"#, "localTime"),
        (#"{"contentState": {}, "rate": 10}"#, "rate"),
        (#"{"contentState": {}, "sendAt": "tomorrow"}"#, "sendAt"),
        (#"{"contentState": {}, "sendAt": "2001-01-01T00:00:00Z"}"#, "sendAt"),
        (#"{"contentState": {}, "expiration": 1767300000}"#, "BadExpirationDate"),
        (#"{"contentState": {}, "alert": "\u0000"}"#, "NUL"),
    ])
    func badBroadcasts(_ body: String, field: String) async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let created = try await client.call(.post, "/api/channels", body: #"{"environment": "production"}"#, bearer: key)
            let id = try #require(created.json["channel"]?["id"]?.stringValue)
            let answer = try await client.call(.post, Self.path(id, "/broadcast"), body: body, bearer: key)
            #expect(answer.status == .badRequest, "\(answer)")
            #expect(
                answer.json["error"]?.stringValue?.contains(field) == true || answer.reason == field, "\(answer)")
            #expect(try await app.store.recentSends(after: nil, limit: 10).sends.isEmpty, "nothing recorded or queued")
        }
    }

    @Test(
        "a broadcast at sendAt waits in the queue, fires once at its time stamped then, and is listed as a send; cancelled or with its channel deleted it sends nothing",
        arguments: Backend.available)
    func scheduled(backend: Backend) async throws {
        let wall = ManualWallClock(ScheduleTests.start)
        try await ServerHarness.withServer(backend, clock: wall) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            var channels: [String] = []
            for _ in 0..<3 {
                let created = try await client.call(
                    .post, "/api/channels", body: #"{"environment": "production", "storagePolicy": 1}"#, bearer: key)
                channels.append(try #require(created.json["channel"]?["id"]?.stringValue))
            }
            let subscribers = [testToken(0xA1), testToken(0xA2), testToken(0xA3)]
            for (token, channel) in zip(subscribers, channels) {
                _ = try emulator.createDevice(token: token, environment: .production, topic: ServerHarness.topic)
                try emulator.subscribe(token, to: channel)
            }
            var sends: [String] = []
            for channel in channels {
                let answer = try await client.call(
                    .post, Self.path(channel, "/broadcast"),
                    body: #"{"contentState": {"score": "1-0"}, "sendAt": "2026-01-01T01:00:00Z"}"#, bearer: key)
                #expect(answer.status == .accepted && answer.json["channel"] == .string(channel), "\(answer)")
                #expect(answer.json["send"]?["status"] == "queued" && answer.json["send"]?["sendAt"] == "2026-01-01T01:00:00Z")
                let id = try #require(answer.json["send"]?["id"]?.stringValue)
                #expect(answer.headers[.location] == "/api/sends/\(id)")
                sends.append(id)
            }
            let listed = try await client.call(.get, "/api/sends", bearer: key)
            #expect(Set(listed.json["sends"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []) == Set(sends))
            let cancelled = try await client.call(.delete, "/api/sends/\(sends[1])", bearer: key)
            #expect(cancelled.status == .ok && cancelled.json["status"] == "cancelled", "\(cancelled)")
            let deleted = try await client.call(.delete, Self.path(channels[2]), bearer: key)
            #expect(deleted.status == .ok, "\(deleted)")

            wall.advance(by: .seconds(3599))
            await app.worker.waitUntilIdle()
            for token in subscribers { #expect(try emulator.inbox(for: token).isEmpty, "nothing before its time") }

            wall.advance(by: .seconds(1))
            await app.worker.waitUntilIdle()
            await app.worker.waitUntilIdle()
            let ids = sends.compactMap(SendID.init)
            #expect(ids.count == 3)
            let fired = try #require(try await app.store.send(ids[0]))
            #expect(fired.status == .completed && fired.counts.accepted == 1, "\(fired)")
            let inbox = try emulator.inbox(for: subscribers[0])
            #expect(inbox.count == 1, "fired once")
            let entry = try #require(inbox.first)
            let aps = try #require(try JSONValue(parsing: entry.payload)["aps"])
            #expect(
                aps["timestamp"] == .integer(Int(ScheduleTests.start.timeIntervalSince1970) + 3600),
                "stamped when sent, not when asked: \(aps)")
            #expect(aps["content-state"]?["score"] == "1-0")

            #expect(try await app.store.send(ids[1])?.status == .cancelled)
            #expect(try emulator.inbox(for: subscribers[1]).isEmpty, "a cancelled broadcast sends nothing")
            let orphaned = try #require(try await app.store.send(ids[2]))
            #expect(orphaned.status == .failed && orphaned.message?.contains("was deleted") == true, "\(orphaned)")
            #expect(try emulator.inbox(for: subscribers[2]).isEmpty, "a deleted channel gets nothing")
        }
    }

    @Test("a channel creation APNs refuses for the app says where the Broadcast Capability is switched on; other refusals do not")
    func capabilityHint() {
        func refusal(_ status: Int, _ reason: APNSReason) -> APNSChannelError {
            APNSChannelError(
                .rejected, "Creating a channel was refused: \(status) \(reason).",
                rejection: APNSRejection(status: status, reason: reason, timestamp: nil, apnsID: "x", uniqueID: nil))
        }
        for (status, reason) in [(403, APNSReason.invalidProviderToken), (400, .topicDisallowed)] {
            let answer = ChannelOperations.creationFailure(refusal(status, reason), app: "com.example.app", environment: .production)
            #expect(answer.status == .badRequest && answer.reason == reason.rawValue)
            #expect(answer.message.contains("Broadcast Capability on the App ID com.example.app"), "\(answer.message)")
        }
        let other = ChannelOperations.creationFailure(refusal(400, .badExpirationDate), app: "com.example.app", environment: .production)
        #expect(!other.message.contains("Broadcast Capability"))
    }
}
