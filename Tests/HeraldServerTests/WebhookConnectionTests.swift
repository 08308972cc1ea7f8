import Foundation
import HeraldWebhooks
import Testing

/// The webhook client's keep-alive connections, against a real HTTP/1.1 receiver on 127.0.0.1.
@Suite("Webhooks: keep-alive connections to the receiver", .timeLimit(.minutes(1)))
struct WebhookConnectionTests {
    @Test("posts to one receiver reuse one connection, through a 500 answer too")
    func reused() async throws {
        try await WebhookReceiver.with(answer: { $0 == 1 ? 500 : 200 }) { receiver, url in
            let client = WebhookHTTPClient()
            let target = try #require(URL(string: url))
            var statuses: [Int] = []
            for n in 0..<4 {
                let answer = try await client.post(
                    url: target, headers: [("Herald-Signature", "t=0,v1=test")], body: Array(#"[{"n":\#(n)}]"#.utf8),
                    timeout: .seconds(10))
                statuses.append(answer.status)
            }
            #expect(statuses == [200, 500, 200, 200])
            #expect(client.connectionsOpened == 1, "one connection for four posts")
            #expect(receiver.deliveries.map { String(decoding: $0.body, as: UTF8.self) }.last == #"[{"n":3}]"#)
        }
    }

    @Test("a receiver that is gone fails the post with a reason, and the next post connects afresh")
    func refused() async throws {
        let client = WebhookHTTPClient()
        // Port 9 (discard) on loopback: nothing listens there on a test machine.
        let target = try #require(URL(string: "http://127.0.0.1:9/hook"))
        for _ in 0..<2 {
            await #expect(throws: WebhookHTTPClient.Failure.self) {
                _ = try await client.post(url: target, headers: [], body: [], timeout: .seconds(5))
            }
        }
        #expect(client.connectionsOpened == 0)
    }
}
