import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

@Suite("Console: scheduling a send", .timeLimit(.minutes(2)))
struct ConsoleScheduleTests {
    /// A signed-in console, with one device of `user` registered (`extra` adds registration fields).
    static func console(
        _ client: ServerClient, _ app: HeraldApplication, user: String, token: Int, extra: String = ""
    ) async throws -> ConsoleClient {
        try await client.register(testToken(token), debug: true, extra: #", "userId": "\#(user)"\#(extra)"#)
        var browser = ConsoleClient(client)
        try await browser.signIn(try await ConsoleSessionTests.adminKey(app))
        return browser
    }

    @Test("the compose page offers now, a time and a local time, a rate and a Schedule button, all labelled")
    func composeControls() async throws {
        try await ServerHarness.withServer { client, app in
            var browser = ConsoleClient(client)
            try await browser.signIn(try await ConsoleSessionTests.adminKey(app))
            let page = try await browser.call(.get, "/console/compose").body
            for control in [
                #"id="when-now" value="now" checked"#, #"id="when-at" value="at""#, #"id="when-local" value="local""#,
                #"<label for="send-at">"#, #"id="send-at" type="datetime-local""#, #"<label for="local-time">"#,
                #"id="local-time" type="datetime-local""#, #"<label for="time-zone">"#, #"<label for="rate">"#,
                #"id="rate" type="number" min="1""#, #"<div id="when-at-fields" hidden>"#,
            ] {
                #expect(page.contains(control), "\(control)")
            }
            let script = try await browser.call(.get, "/console/assets/compose.js").body
            #expect(script.contains(#""Schedule""#) && script.contains("sendAt") && script.contains("localTime"))
        }
    }

    @Test("the dry run refuses a bad or past sendAt naming the field, and accepts a future one")
    func dryRun() async throws {
        try await ServerHarness.withServer { client, app in
            var browser = try await Self.console(client, app, user: "sam", token: 0x31)
            let target = #""target": {"user": "sam"}, "alert": "Later""#
            for bad in ["tomorrow", "2020-01-01T09:00:00+01:00"] {
                let answer = try await browser.send(#"{\#(target), "sendAt": "\#(bad)"}"#, dryRun: true)
                #expect(answer.status == .badRequest && answer.json["reason"] == "invalidField", "\(answer)")
                #expect(answer.json["error"]?.stringValue?.contains(#"The field "sendAt""#) == true, "\(answer)")
            }
            let later = RFC3339.string(Date().addingTimeInterval(3_600))
            let accepted = try await browser.send(
                #"{\#(target), "sendAt": "\#(later)", "rate": 10}"#, dryRun: true)
            #expect(accepted.status == .ok && accepted.json["targetCount"] == 1, "\(accepted)")
            #expect(try await app.store.recentSends(after: nil, limit: 5).sends.isEmpty, "a dry run records nothing")
        }
    }

    @Test("a send scheduled from the console is listed and shown as Scheduled for its time, and cancelled from its page")
    func scheduledAt() async throws {
        try await ServerHarness.withServer { client, app in
            var browser = try await Self.console(client, app, user: "sam", token: 0x32)
            let sendAt = Date().addingTimeInterval(7_200)
            let scheduled = try await browser.send(
                #"{"target": {"user": "sam"}, "alert": "Later", "sendAt": "\#(RFC3339.string(sendAt))"}"#)
            #expect(scheduled.status == .accepted, "\(scheduled)")
            let id = try #require(scheduled.json["id"]?.stringValue)
            let sendID = try #require(SendID(id))
            let stored = try #require(RFC3339.date(RFC3339.string(sendAt)))
            let shown = ConsoleController.display(stored)

            let list = try await browser.call(.get, "/console/sends").body
            #expect(list.contains(#"<span class="status-scheduled">Scheduled for <time"#), "\(list)")
            #expect(list.contains(">\(shown)</time>"), "\(list)")
            let page = try await browser.call(.get, "/console/sends/\(id)").body
            #expect(page.contains(#"<p id="send-schedule" class="scheduled">Scheduled for <time id="send-at""#), "\(page)")
            #expect(page.contains(">\(shown)</time>") && page.contains("Cancel send"))

            let cancelled = try await browser.call(.post, "/console/sends/\(id)/cancel", form: [("_csrf", browser.csrf)])
            #expect(cancelled.status == .seeOther)
            let after = try await browser.call(.get, "/console/sends/\(id)").body
            #expect(after.contains("status-cancelled") && !after.contains("Scheduled for") && !after.contains("Cancel send"))
            #expect(try await app.store.send(sendID)?.counts.total == 0, "nothing was sent")
        }
    }

    @Test("a send at each device's local time shows that time, the zone of devices without one, and its next wave")
    func scheduledLocalTime() async throws {
        try await ServerHarness.withServer { client, app in
            var browser = try await Self.console(client, app, user: "kai", token: 0x33, extra: #", "timeZone": "Asia/Tokyo""#)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let day = calendar.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(3 * 86_400))
            let local = String(format: "%04d-%02d-%02dT09:00", day.year!, day.month!, day.day!)
            let scheduled = try await browser.send(
                #"{"target": {"user": "kai"}, "alert": "Morning", "localTime": "\#(local)", "timeZone": "Europe/Paris"}"#)
            #expect(scheduled.status == .accepted, "\(scheduled)")
            let id = try #require(scheduled.json["id"]?.stringValue)
            let sendID = try #require(SendID(id))
            let record = try await #require(app.store.send(sendID))
            #expect(record.sendAt != nil)
            let wave = ConsoleController.display(record.sendAt)
            let readable = local.replacingOccurrences(of: "T", with: " ")

            let list = try await browser.call(.get, "/console/sends").body
            #expect(list.contains("Scheduled for \(readable) in each device's time zone, next wave at <time"), "\(list)")
            let page = try await browser.call(.get, "/console/sends/\(id)").body
            #expect(page.contains("Scheduled for \(readable) in each device's time zone (Europe/Paris for devices without one); next wave at"), "\(page)")
            #expect(page.contains(">\(wave)</time>") && page.contains("Cancel send"))

            let unset = try await browser.send(#"{"target": {"user": "kai"}, "alert": "Morning", "localTime": "\#(local)"}"#)
            let unsetID = try #require(unset.json["id"]?.stringValue, "\(unset)")
            let unsetPage = try await browser.call(.get, "/console/sends/\(unsetID)").body
            #expect(unsetPage.contains("(UTC for devices without one)"), "the default zone by its name: \(unsetPage)")
        }
    }
}
