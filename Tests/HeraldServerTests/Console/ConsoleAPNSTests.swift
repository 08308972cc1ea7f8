import HTTPTypes
import HeraldCore
import Testing

@testable import HeraldServer

@Suite("Console: APNs latency and connections on the overview", .timeLimit(.minutes(2)))
struct ConsoleAPNSTests {
    @Test("the overview says no APNs requests were made, then shows p50, p99 and the open connection after a send")
    func apnsFigures() async throws {
        try await ServerHarness.withServer { client, app in
            let secret = try await ConsoleSessionTests.adminKey(app)
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let empty = try await browser.call(.get, "/console").body
            #expect(empty.contains("No APNs requests in the last 24 h."), "\(empty)")
            #expect(empty.contains(#"<dd id="apns-p50">—</dd>"#) && empty.contains(#"<dd id="apns-open">0</dd>"#))

            try await client.register(testToken(0x34), debug: true, extra: #", "userId": "lee""#)
            let sent = try await browser.send(#"{"target": {"user": "lee"}, "alert": "Now"}"#)
            #expect(sent.status == .ok && sent.json["counts"]?["accepted"] == 1, "\(sent)")
            let overview = try await browser.call(.get, "/console").body
            #expect(!overview.contains("No APNs requests"), "\(overview)")
            #expect(!overview.contains(#"<dd id="apns-p50">—</dd>"#) && !overview.contains(#"<dd id="apns-p99">—</dd>"#))
            #expect(overview.contains(#"<dd id="apns-open">1</dd>"#), "\(overview)")
            #expect(
                overview.contains(
                    #"<tr><td>com.example.app</td><td>development</td><td class="num">1</td><td class="num">1</td>"#),
                "\(overview)")
        }
    }

    @Test(
        "latencies read in the unit that suits them",
        arguments: [
            (nil, "—"), (.microseconds(704), "704 µs"), (.microseconds(3_072), "3.1 ms"), (.microseconds(20_480), "20 ms"),
            (.microseconds(5_242_880), "5.24 s"),
        ] as [(Duration?, String)])
    func latencyText(_ duration: Duration?, _ text: String) {
        #expect(ConsoleOverviewPages.latency(duration) == text)
    }
}
