import Foundation
import HTTPTypes
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

@Suite("Console: receipts and cancelling on a send's page", .timeLimit(.minutes(2)))
struct ConsoleSendPageTests {
    @Test("a send's page and the overview show received and opened counts and rates", arguments: Backend.available)
    func receipts(_ backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let secret = try await app.store.createAPIKey(name: "ops", scopes: [.admin, .send]).secret.value
            let (one, two) = (testToken(0x71), testToken(0x72))
            try await client.register(one, debug: true, extra: #", "userId": "ann""#)
            try await client.register(two, debug: true, extra: #", "userId": "ann""#)
            let sent = try await client.call(.post, "/api/send", body: #"{"target": {"user": "ann"}, "alert": "Hi"}"#, bearer: secret)
            let id = try #require(sent.json["id"]?.stringValue)
            let reported = try await client.call(
                .post, "/api/events",
                body: ReceiptsTests.events(
                    ReceiptsTests.event("received", one, send: id), ReceiptsTests.event("received", two, send: id),
                    ReceiptsTests.event("opened", two, send: id)))
            #expect(reported.json["recorded"] == 3, "\(reported)")

            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let page = try await browser.call(.get, "/console/sends/\(id)")
            #expect(page.body.contains(#"<dd id="count-received">2</dd>"#), "\(page.body)")
            #expect(page.body.contains(#"<dd id="rate-received">100 %</dd>"#))
            #expect(page.body.contains(#"<dd id="count-opened">1</dd>"#) && page.body.contains(#"<dd id="rate-opened">50 %</dd>"#))
            #expect(!page.body.contains("Cancel send"), "a completed send cannot be cancelled")
            let overview = try await browser.call(.get, "/console")
            #expect(overview.body.contains("Received, 7 days</dt><dd>2 <small>100 %</small>"), "\(overview.body)")
            #expect(overview.body.contains("Opened, 7 days</dt><dd>1 <small>50 %</small>"))
        }
    }

    @Test("a queued send is cancelled from its page with the session's CSRF token, and not without it")
    func cancel() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await app.store.createAPIKey(name: "ops", scopes: [.admin]).secret.value
            await app.worker.waitUntilIdle()
            let send = try await CancelTests.queue(app.store, target: #"{"tag": "none"}"#, count: 0)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let page = try await browser.call(.get, "/console/sends/\(send.id)")
            #expect(page.body.contains("action=\"/console/sends/\(send.id)/cancel\"") && page.body.contains("Cancel send"))
            let forged = try await browser.call(.post, "/console/sends/\(send.id)/cancel", form: [("_csrf", "guess")])
            #expect(forged.status == .forbidden)
            #expect(try await app.store.send(send.id)?.status == .queued)
            let cancelled = try await browser.call(.post, "/console/sends/\(send.id)/cancel", form: [("_csrf", browser.csrf)])
            #expect(cancelled.status == .seeOther && cancelled.headers[.location] == "/console/sends/\(send.id)")
            #expect(try await app.store.send(send.id)?.status == .cancelled)
            let after = try await browser.call(.get, "/console/sends/\(send.id)")
            #expect(after.body.contains("status-cancelled") && !after.body.contains("Cancel send"))
            #expect(after.body.contains("nothing was sent"))
        }
    }
}
