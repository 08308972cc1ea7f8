import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

@Suite("Console: Live Activities and broadcast channels", .timeLimit(.minutes(2)))
struct ConsoleActivityPageTests {
    static let topic = ServerHarness.topic

    /// A base64 channel id, in the same order in SQLite's bytes and PostgreSQL's collation.
    static func channelID(_ n: Int) -> String { String(format: "Y2g%03d==", n) }

    /// The table row of the page whose first cell is `id`, or `nil`.
    static func row(_ page: String, _ id: String) -> String? {
        ConsoleClient.between(page, "<tr><td class=\"mono\">\(id)</td>", "</tr>")
    }

    /// The address of the page's link labelled `label`, unescaped.
    static func link(_ page: String, _ label: String) -> String? {
        guard let end = page.range(of: "\">\(label)"), let start = page[..<end.lowerBound].range(of: "<a href=\"", options: .backwards)
        else { return nil }
        return page[start.upperBound..<end.lowerBound].replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The value of a query parameter of a redirect's location.
    static func parameter(_ answer: ServerClient.Answer, _ name: String) -> String? {
        answer.headers[.location].flatMap { URLComponents(string: $0)?.queryItems?.first { $0.name == name }?.value }
    }

    @Test("activities are listed newest first by page, with running ones' update tokens and only those ended marked so", arguments: Backend.available)
    func activityList(_ backend: Backend) async throws {
        let wall = ManualWallClock(ScheduleTests.start)
        try await ServerHarness.withServer(backend, clock: wall) { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            for n in 1...30 {
                let new = NewActivity(topic: Self.topic, id: "order-\(n)", activityType: "DeliveryAttributes")
                #expect(try await app.store.createActivity(new) != nil)
                wall.advance(by: .seconds(60))
            }
            for byte in [0x31, 0x32] {
                try await client.register(
                    testToken(byte), debug: true, extra: #", "tokenKind": "liveactivity", "activityId": "order-30""#)
            }
            _ = try await app.store.recordActivityPush(topic: Self.topic, id: "order-29", ending: true)

            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let first = try await browser.call(.get, "/console/activities")
            #expect(first.status == .ok && first.body.contains(#"<a href="/console/activities" aria-current="page">Live Activities</a>"#))
            let newest = try #require(Self.row(first.body, "order-30"), "\(first.body)")
            #expect(newest.contains("DeliveryAttributes") && newest.contains(#"<td class="num optional">2</td>"#), "two update tokens: \(newest)")
            #expect(newest.contains("badge ok\">active") && newest.contains("action=\"/console/activities/end\""))
            let ended = try #require(Self.row(first.body, "order-29"))
            #expect(ended.contains(">ended<") && !ended.contains("/console/activities/end") && ended.contains("—"), "\(ended)")
            #expect(first.body.components(separatedBy: "<tr><td class=\"mono\">").count - 1 == 25, "25 a page")
            #expect(first.body.range(of: ">order-30<")!.lowerBound < first.body.range(of: ">order-6<")!.lowerBound, "newest first")
            #expect(Self.row(first.body, "order-5") == nil)

            let next = try #require(Self.link(first.body, "Older activities"))
            #expect(next.hasPrefix("/console/activities?app=\(Self.topic)&after="), "\(next)")
            let second = try await browser.call(.get, next)
            #expect(second.status == .ok)
            #expect((1...5).allSatisfy { Self.row(second.body, "order-\($0)") != nil } && Self.row(second.body, "order-6") == nil)
            #expect(!second.body.contains("Older activities") && second.body.contains("← Newest"), "the last page")

            let endedOnly = try await browser.call(.get, "/console/activities?status=ended")
            #expect(Self.row(endedOnly.body, "order-29") != nil && Self.row(endedOnly.body, "order-30") == nil)
            let activeOnly = try await browser.call(.get, "/console/activities?status=active")
            #expect(Self.row(activeOnly.body, "order-29") == nil && Self.row(activeOnly.body, "order-30") != nil)
            let badStatus = try await browser.call(.get, "/console/activities?status=running")
            #expect(badStatus.status == .badRequest && badStatus.body.contains("status"))
            let badCursor = try await browser.call(.get, "/console/activities?after=nope")
            #expect(badCursor.status == .badRequest && badCursor.body.contains("after"))
        }
    }

    @Test("End sends the end to the activity's update tokens as DELETE /api/activities/{id} does, only with the session's CSRF token", arguments: Backend.available)
    func endActivity(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let secret = try await ConsoleSessionTests.adminKey(app)
            // An id with a space, a slash and a query's characters: it travels in a form field and a query value.
            let id = "order 7/b&c=d"
            #expect(try await app.store.createActivity(NewActivity(topic: Self.topic, id: id, activityType: "Delivery")) != nil)
            let token = testToken(0x41)
            try await client.register(token, debug: true, extra: #", "tokenKind": "liveactivity", "activityId": "\#(id)""#)
            let form = [("app", Self.topic), ("id", id)]

            var browser = ConsoleClient(client)
            let anonymous = try await browser.call(.post, "/console/activities/end", form: [("_csrf", "x")] + form)
            #expect(anonymous.status == .seeOther && anonymous.headers[.location] == "/console/sign-in")
            try await browser.signIn(secret)
            let page = try await browser.call(.get, "/console/activities")
            #expect(page.body.contains(#"data-confirm="End the activity “order 7/b&amp;c=d”?"#), "asks first")
            let forged = try await browser.call(.post, "/console/activities/end", form: [("_csrf", "guess")] + form)
            #expect(forged.status == .forbidden)
            #expect(try await app.store.activity(topic: Self.topic, id: id)?.isActive == true, "nothing ended")
            #expect(emulator.device(token) == nil, "nothing sent")

            let ended = try await browser.call(.post, "/console/activities/end", form: [("_csrf", browser.csrf)] + form)
            #expect(ended.status == .seeOther, "\(ended)")
            #expect(Self.parameter(ended, "ended") == id && Self.parameter(ended, "app") == Self.topic)
            let sendID = try #require(Self.parameter(ended, "send").flatMap(SendID.init))
            let stored = try #require(try await app.store.activity(topic: Self.topic, id: id))
            #expect(!stored.isActive && stored.endedAt != nil)
            let inbox = try emulator.inbox(for: token)
            #expect(inbox.count == 1 && inbox.first?.pushType == "liveactivity" && inbox.first?.priority == 10)
            #expect(try JSONValue(parsing: try #require(inbox.first).payload)["aps"]?["event"] == "end")
            #expect(try await app.store.send(sendID)?.counts.accepted == 1, "the end is a send, as the API's")

            let after = try await browser.call(.get, try #require(ended.headers[.location]))
            #expect(after.body.contains("Activity “order 7/b&amp;c=d” ended") && after.body.contains("/console/sends/\(sendID)"))
            #expect(try #require(Self.row(after.body, "order 7/b&amp;c=d")).contains(">ended<"))
            let again = try await browser.call(.post, "/console/activities/end", form: [("_csrf", browser.csrf)] + form)
            #expect(again.status == .conflict && again.body.contains("has ended"), "as the API: 409 activityEnded")
            #expect(try emulator.inbox(for: token).count == 1, "nothing more sent")
            let unknown = try await browser.call(
                .post, "/console/activities/end", form: [("_csrf", browser.csrf), ("app", Self.topic), ("id", "none")])
            #expect(unknown.status == .notFound)
        }
    }

    @Test("a channel is created from the form, listed, and deleted with the session's CSRF token, as /api/channels does", arguments: Backend.available)
    func channelLife(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let secret = try await ConsoleSessionTests.adminKey(app)
            var browser = ConsoleClient(client)
            let anonymous = try await browser.call(
                .post, "/console/channels", form: [("_csrf", "x"), ("environment", "production")])
            #expect(anonymous.status == .seeOther && anonymous.headers[.location] == "/console/sign-in")
            try await browser.signIn(secret)
            let empty = try await browser.call(.get, "/console/channels")
            #expect(empty.status == .ok && empty.body.contains("No live channel"))
            #expect(empty.body.contains(#"<a href="/console/activities" aria-current="page">Live Activities</a>"#))

            let create = [("app", Self.topic), ("environment", "production"), ("storagePolicy", "1")]
            let forged = try await browser.call(.post, "/console/channels", form: [("_csrf", "guess")] + create)
            #expect(forged.status == .forbidden && emulator.channels().isEmpty)
            for (field, value, named) in [
                ("environment", "staging", "environment"), ("storagePolicy", "x", "storagePolicy"),
                ("storagePolicy", "2", "storagePolicy"), ("app", "com.example.unknown", "com.example.unknown"),
            ] {
                let form = [("_csrf", browser.csrf)] + create.map { $0.0 == field ? (field, value) : $0 }
                let refused = try await browser.call(.post, "/console/channels", form: form)
                #expect(refused.status == .badRequest && refused.body.contains("role=\"alert\""), "\(field)=\(value)")
                #expect(refused.body.contains(named), "the error names \(named)")
            }
            #expect(emulator.channels().isEmpty)
            #expect(try await app.store.liveChannels(topic: Self.topic, environment: nil, after: nil, limit: 10).isEmpty)

            let created = try await browser.call(.post, "/console/channels", form: [("_csrf", browser.csrf)] + create)
            #expect(created.status == .seeOther, "\(created)")
            let id = try #require(Self.parameter(created, "created"))
            #expect(emulator.channels().map(\.id) == [id], "created on APNs (the emulator)")
            let record = try #require(try await app.store.channel(id: id))
            #expect(record.isLive && record.environment == .production && record.storagePolicy == 1)
            let listed = try await browser.call(.get, try #require(created.headers[.location]))
            #expect(listed.body.contains("id=\"channel-notice\"") && listed.body.contains("created on APNs"))
            let row = try #require(Self.row(listed.body, id), "\(listed.body)")
            #expect(row.contains("production") && row.contains("1 · keeps the newest message"))
            #expect(row.contains("data-confirm=\"Delete the channel \(id)?"), "asks first")
            let development = try await browser.call(.get, "/console/channels?environment=development")
            #expect(Self.row(development.body, id) == nil, "per environment")

            let forgedDelete = try await browser.call(.post, "/console/channels/delete", form: [("_csrf", "guess"), ("id", id)])
            #expect(forgedDelete.status == .forbidden && emulator.channels().count == 1)
            let deleted = try await browser.call(.post, "/console/channels/delete", form: [("_csrf", browser.csrf), ("id", id)])
            #expect(deleted.status == .seeOther && Self.parameter(deleted, "deleted") == id, "\(deleted)")
            #expect(emulator.channels().isEmpty, "deleted on APNs")
            #expect(try await app.store.channel(id: id)?.isLive == false)
            let after = try await browser.call(.get, try #require(deleted.headers[.location]))
            #expect(after.body.contains("deleted: its subscribers get no more broadcasts") && Self.row(after.body, id) == nil)
            let again = try await browser.call(.post, "/console/channels/delete", form: [("_csrf", browser.csrf), ("id", id)])
            #expect(again.status == .conflict, "as the API: 409 channelDeleted")
        }
    }

    @Test("channels are listed 50 a page; one APNs no longer knows is deleted all the same, and the notice says so")
    func channelPages() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            for n in 0..<55 {
                let id = Self.channelID(n)
                #expect(try await app.store.recordChannel(NewChannel(id: id, topic: Self.topic, environment: .development, storagePolicy: 0)))
            }
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let first = try await browser.call(.get, "/console/channels")
            #expect(Self.row(first.body, Self.channelID(0)) != nil && Self.row(first.body, Self.channelID(49)) != nil)
            #expect(Self.row(first.body, Self.channelID(50)) == nil)
            let next = try #require(Self.link(first.body, "Next page"))
            let second = try await browser.call(.get, next)
            #expect((50..<55).allSatisfy { Self.row(second.body, Self.channelID($0)) != nil })
            #expect(Self.row(second.body, Self.channelID(49)) == nil && !second.body.contains("Next page →"))

            // Recorded here, unknown to APNs: deleted on both sides all the same, as DELETE /api/channels/{id} does.
            let deleted = try await browser.call(.post, "/console/channels/delete", form: [("_csrf", browser.csrf), ("id", Self.channelID(3))])
            #expect(deleted.status == .seeOther && Self.parameter(deleted, "gone") == "1", "\(deleted.status) \(deleted.body.suffix(600))")
            let page = try await browser.call(.get, try #require(deleted.headers[.location]))
            #expect(page.body.contains("APNs no longer knew it"))
            #expect(try await app.store.channel(id: Self.channelID(3))?.isLive == false)
        }
    }

    @Test("hostile activity ids, types and channel ids render inert on both pages and in their confirm questions", arguments: Backend.available)
    func escaping(_ backend: Backend) async throws {
        let (attack, image) = (ConsolePageTests.attack, ConsolePageTests.image)
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            _ = try await app.store.createActivity(NewActivity(topic: Self.topic, id: attack, activityType: image))
            _ = try await app.store.createActivity(NewActivity(topic: Self.topic, id: image + "\"'", activityType: attack))
            #expect(try await app.store.recordChannel(NewChannel(id: attack, topic: Self.topic, environment: .production, storagePolicy: 0)))
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            for path in [
                "/console/activities", "/console/channels",
                "/console/activities?ended=\(ConsoleClient.encode(attack))",
                "/console/channels?deleted=\(ConsoleClient.encode(attack))",
            ] {
                let answer = try await browser.call(.get, path)
                #expect(answer.status == .ok, "\(path)")
                for raw in [attack, image, "<script>", "<img"] { #expect(!answer.body.contains(raw), "\(path) contains \(raw)") }
                #expect(answer.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "\(path) shows the id escaped")
            }
            let activities = try await browser.call(.get, "/console/activities")
            #expect(activities.body.contains("&lt;img src=x onerror=alert(2)&gt;&quot;&#39;"), "quotes escaped in attributes too")
        }
    }

    @Test("signed out, the pages go to sign-in and the forms change nothing")
    func signedOut() async throws {
        try await ServerHarness.withServer { client, app in
            _ = try await app.store.createActivity(NewActivity(topic: Self.topic, id: "order-1", activityType: "Delivery"))
            #expect(try await app.store.recordChannel(NewChannel(id: "Y2g=", topic: Self.topic, environment: .production, storagePolicy: 0)))
            let browser = ConsoleClient(client)
            for path in ["/console/activities", "/console/channels"] {
                let answer = try await client.call(.get, path)
                #expect(answer.status == .seeOther && answer.headers[.location] == "/console/sign-in", "\(path)")
            }
            for (path, form) in [
                ("/console/activities/end", [("app", Self.topic), ("id", "order-1")]),
                ("/console/channels/delete", [("id", "Y2g=")]),
            ] {
                var anonymous = browser
                let answer = try await anonymous.call(.post, path, form: [("_csrf", "")] + form)
                #expect(answer.status == .seeOther && answer.headers[.location] == "/console/sign-in", "\(path)")
            }
            // An API key is no console session.
            let key = try await SendTests.key(app)
            let withKey = try await client.call(.get, "/console/activities", bearer: key)
            #expect(withKey.status == .seeOther)
            #expect(try await app.store.activity(topic: Self.topic, id: "order-1")?.isActive == true)
            #expect(try await app.store.channel(id: "Y2g=")?.isLive == true)
        }
    }
}
