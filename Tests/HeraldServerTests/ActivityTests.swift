import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// A Live Activity's whole life through the API, in-process: the server, its store and its emulator.
@Suite("Live Activities: start, update and end by the app's activity id", .timeLimit(.minutes(2)))
struct ActivityTests {
    static func payload(_ entry: InboxEntry) throws -> JSONValue { try JSONValue(parsing: entry.payload) }

    @Test("start on a user's two devices, two updates and an end reach each in order; later pushes are refused", arguments: Backend.available)
    func life(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let starts = [testToken(0x71), testToken(0x72)]
            let updates = [testToken(0x81), testToken(0x82)]
            let installations = [UUID(), UUID()]
            for (token, installation) in zip(starts, installations) {
                try await client.register(
                    token, debug: true,
                    extra: #", "userId": "alice", "installationId": "\#(installation)", "tokenKind": "liveactivity-start", "activityType": "DeliveryAttributes""#)
            }
            // A push-to-start token of another type, and another user's: neither starts this activity.
            try await client.register(
                testToken(0x73), debug: true,
                extra: #", "userId": "alice", "tokenKind": "liveactivity-start", "activityType": "MatchAttributes""#)
            try await client.register(
                testToken(0x74), debug: true,
                extra: #", "userId": "bob", "tokenKind": "liveactivity-start", "activityType": "DeliveryAttributes""#)

            let started = try await client.call(
                .post, "/api/activities",
                body: #"{"activityId": "order-1", "activityType": "DeliveryAttributes", "target": {"user": "alice"}, "attributes": {"orderNumber": 1}, "contentState": {"stop": 1}, "alert": {"title": "On its way", "body": "Your order left"}}"#,
                bearer: key)
            #expect(started.status == .ok, "\(started)")
            #expect(started.json["counts"]?["accepted"] == 2 && started.json["activity"]?["status"] == "active")
            for token in starts {
                let inbox = try emulator.inbox(for: token)
                #expect(inbox.count == 1 && inbox.first?.pushType == "liveactivity")
                let aps = try #require(try Self.payload(inbox[0])["aps"])
                #expect(aps["event"] == "start" && aps["attributes-type"] == "DeliveryAttributes")
                #expect(aps["alert"]?["title"] == "On its way" && aps["input-push-token"] == 1)
                #expect(aps["content-state"]?["stop"] == 1 && aps["attributes"]?["orderNumber"] == 1)
            }
            #expect(emulator.device(testToken(0x73)) == nil && emulator.device(testToken(0x74)) == nil)

            // Each device reports its activity's update token, as the SDK does.
            for (token, installation) in zip(updates, installations) {
                try await client.register(
                    token, debug: true,
                    extra: #", "installationId": "\#(installation)", "tokenKind": "liveactivity", "activityId": "order-1""#)
            }
            for stop in [2, 3] {
                let answer = try await client.call(
                    .patch, "/api/activities/order-1", body: #"{"contentState": {"stop": \#(stop)}}"#, bearer: key)
                #expect(answer.status == .ok && answer.json["counts"]?["accepted"] == 2, "\(answer)")
            }
            let ended = try await client.call(
                .delete, "/api/activities/order-1",
                body: #"{"contentState": {"stop": 4}, "dismissalDate": 1767300000}"#, bearer: key)
            #expect(ended.status == .ok && ended.json["activity"]?["status"] == "ended", "\(ended)")
            for token in updates {
                let inbox = try emulator.inbox(for: token)
                let events = try inbox.map { try Self.payload($0)["aps"]?["event"]?.stringValue ?? "-" }
                #expect(events == ["update", "update", "end"])
                #expect(inbox.map(\.priority) == [5, 5, 10], "updates default to the unbudgeted priority 5")
                let stops = try inbox.map { try Self.payload($0)["aps"]?["content-state"]?["stop"]?.intValue ?? 0 }
                #expect(stops == [2, 3, 4])
                #expect(try Self.payload(inbox[2])["aps"]?["dismissal-date"] == 1_767_300_000)
            }
            #expect(try emulator.inbox(for: starts[0]).count == 1, "updates go to update tokens only")

            let late = try await client.call(
                .patch, "/api/activities/order-1", body: #"{"contentState": {"stop": 5}}"#, bearer: key)
            #expect(late.status == .conflict && late.reason == "activityEnded", "\(late)")
            let again = try await client.call(.delete, "/api/activities/order-1", bearer: key)
            #expect(again.status == .conflict && again.reason == "activityEnded", "\(again)")
            for token in updates { #expect(try emulator.inbox(for: token).count == 3, "nothing more was sent") }

            let shown = try await client.call(.get, "/api/activities/order-1", bearer: key)
            #expect(shown.json["status"] == "ended" && shown.json["updates"] == 2 && shown.json["devices"] == 2)
            let unknown = try await client.call(
                .patch, "/api/activities/order-2", body: #"{"contentState": {}}"#, bearer: key)
            #expect(unknown.status == .notFound && unknown.reason == "unknownActivity", "\(unknown)")
            let reused = try await client.call(
                .post, "/api/activities",
                body: #"{"activityId": "order-1", "activityType": "DeliveryAttributes", "target": {"user": "alice"}, "attributes": {}, "contentState": {}, "alert": "x"}"#,
                bearer: key)
            #expect(reused.status == .conflict && reused.reason == "activityExists", "\(reused)")
        }
    }

    @Test("a start can wait for its time like any send, stamped when it is sent; an end cannot")
    func scheduledStart() async throws {
        let wall = ManualWallClock(ScheduleTests.start)
        try await ServerHarness.withServer(clock: wall) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await client.register(
                testToken(0x75), debug: true,
                extra: #", "userId": "carol", "tokenKind": "liveactivity-start", "activityType": "MatchAttributes""#)
            let started = try await client.call(
                .post, "/api/activities",
                body: #"{"activityId": "match-9", "activityType": "MatchAttributes", "target": {"user": "carol"}, "attributes": {}, "contentState": {"score": "0-0"}, "alert": "Kick-off", "sendAt": "2026-01-01T19:00:00Z"}"#,
                bearer: key)
            #expect(started.status == .accepted && started.json["sendAt"] == "2026-01-01T19:00:00Z", "\(started)")
            #expect(started.json["activity"]?["status"] == "active")
            await app.worker.waitUntilIdle()
            #expect(emulator.device(testToken(0x75)) == nil, "not before kick-off")
            wall.set(to: try #require(RFC3339.date("2026-01-01T19:00:00Z")))
            await app.worker.waitUntilIdle()
            let inbox = try emulator.inbox(for: testToken(0x75))
            #expect(inbox.count == 1)
            // A device keeps the update with the newest timestamp: a scheduled push carries the time it was sent.
            let entry = try #require(inbox.first)
            let aps = try #require(try JSONValue(parsing: entry.payload)["aps"])
            #expect(aps["timestamp"] == .integer(Int(ScheduleTests.start.timeIntervalSince1970) + 19 * 3600), "\(aps)")
            let end = try await client.call(
                .delete, "/api/activities/match-9", body: #"{"sendAt": "2026-01-01T21:00:00Z"}"#, bearer: key)
            #expect(end.status == .badRequest && end.json["error"]?.stringValue?.contains("sendAt") == true, "\(end)")
        }
    }

    @Test("GET /api/activities lists an app's activities newest first by page, all, active or ended, each as GET shows it", arguments: Backend.available)
    func listing(backend: Backend) async throws {
        let wall = ManualWallClock(ScheduleTests.start)
        try await ServerHarness.withServer(backend, clock: wall) { client, app in
            let key = try await SendTests.key(app)
            for n in 1...5 {
                let new = NewActivity(topic: ServerHarness.topic, id: "order \(n)/x", activityType: "DeliveryAttributes")
                #expect(try await app.store.createActivity(new) != nil)
                wall.advance(by: .seconds(60))
            }
            let ended = try await client.call(.delete, "/api/activities/order%202%2Fx", bearer: key)
            #expect(ended.status == .ok, "\(ended)")

            let all = try await client.call(.get, "/api/activities", bearer: key)
            #expect(all.status == .ok && all.json["next"] == nil, "\(all)")
            let listed = try #require(all.json["activities"]?.arrayValue)
            #expect(listed.compactMap { $0["id"]?.stringValue } == (1...5).reversed().map { "order \($0)/x" })
            #expect(all.body.hasPrefix(#"{"activities":[{"activityType":"DeliveryAttributes","createdAt":"#), "keys in name order")
            let shown = try await client.call(.get, "/api/activities/order%205%2Fx", bearer: key)
            guard case .object(var members) = shown.json else { Issue.record("\(shown)"); return }
            members["devices"] = nil
            #expect(members.removeValue(forKey: "budget") != nil, "GET shows the activity's budget this hour")
            #expect(listed.first == .object(members), "as GET /api/activities/{id} shows it, without the count and budget")

            var walked: [String] = []
            var query = "limit=2"
            while true {
                let page = try await client.call(.get, "/api/activities?" + query, bearer: key)
                #expect(page.status == .ok && (page.json["activities"]?.arrayValue?.count ?? 0) <= 2, "\(page)")
                walked += page.json["activities"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                guard let next = page.json["next"]?.stringValue else { break }
                query = "limit=2&after=" + ConsoleClient.encode(next)
            }
            #expect(walked == (1...5).reversed().map { "order \($0)/x" }, "pages of 2 through next: each once, in order")

            let active = try await client.call(.get, "/api/activities?status=active&topic=\(ServerHarness.topic)", bearer: key)
            #expect(active.json["activities"]?.arrayValue?.count == 4, "\(active)")
            let endedOnly = try await client.call(.get, "/api/activities?status=ended", bearer: key)
            let endedRows = try #require(endedOnly.json["activities"]?.arrayValue)
            #expect(endedRows.map { $0["id"] } == ["order 2/x"] && endedRows.first?["endedAt"] != nil, "\(endedOnly)")

            #expect(try await client.call(.get, "/api/activities").status == .unauthorized)
            let registerOnly = try await app.store.createAPIKey(name: "app", scopes: [.register]).secret.value
            #expect(try await client.call(.get, "/api/activities", bearer: registerOnly).status == .forbidden)
        }
    }

    @Test("bad list queries are 400 naming the field", arguments: [
        ("status=running", "status"), ("status=", "status"), ("status=%00", "status"), ("limit=0", "limit"),
        ("limit=1001", "limit"), ("limit=ten", "limit"), ("after=nope", "after"), ("after=12", "after"),
        ("topic=com.example.unknown", "com.example.unknown"),
    ])
    func badListings(_ query: String, field: String) async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let answer = try await client.call(.get, "/api/activities?" + query, bearer: key)
            #expect(answer.status == .badRequest, "\(answer)")
            #expect(answer.json["error"]?.stringValue?.contains(field) == true, "\(answer)")
        }
    }

    @Test("bad activity requests are 400 naming the field, and start nothing", arguments: [
        (#"{"activityType": "T", "target": {"user": "a"}, "attributes": {}, "contentState": {}, "alert": "x"}"#, "activityId"),
        (#"{"activityId": "o", "target": {"user": "a"}, "attributes": {}, "contentState": {}, "alert": "x"}"#, "activityType"),
        (#"{"activityId": "o", "activityType": "T", "target": {"user": "a"}, "contentState": {}, "alert": "x"}"#, "attributes"),
        (#"{"activityId": "o", "activityType": "T", "target": {"user": "a"}, "attributes": {}, "alert": "x"}"#, "contentState"),
        (#"{"activityId": "o", "activityType": "T", "target": {"user": "a"}, "attributes": {}, "contentState": {}}"#, "aps.alert"),
        (#"{"activityId": "o", "activityType": "T", "target": {"user": "a"}, "attributes": {}, "contentState": {}, "alert": "x", "colour": 1}"#, "colour"),
        (#"{"activityId": "o\u0007", "activityType": "T", "target": {"user": "a"}, "attributes": {}, "contentState": {}, "alert": "x"}"#, "activityId"),
    ])
    func badStarts(_ body: String, field: String) async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let answer = try await client.call(.post, "/api/activities", body: body, bearer: key)
            #expect(answer.status == .badRequest, "\(answer)")
            #expect(answer.json["error"]?.stringValue?.contains(field) == true, "\(answer)")
            #expect(try await app.store.activity(topic: ServerHarness.topic, id: "o") == nil)
        }
    }
}
