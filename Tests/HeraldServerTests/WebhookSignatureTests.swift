import Foundation
import HeraldWebhooks
import Testing

@Suite("Webhooks: the signature, the backoff and its jitter")
struct WebhookSignatureTests {
    static let body = Array(#"[{"id":"1"}]"#.utf8)
    static let at = Date(timeIntervalSince1970: 1_767_225_600)

    @Test("Herald-Signature is t=<seconds>,v1=<hex HMAC-SHA256(secret, t.body)>, as Python's hmac computes it")
    func knownVector() {
        // python3 -c "import hmac,hashlib; print(hmac.new(b'whsec_test', b'1767225600.[{\"id\":\"1\"}]', hashlib.sha256).hexdigest())"
        let expected = "6fbc2cc840a68a8b467550020083a90dffa84034b789f5c61a9441e5fa245226"
        #expect(WebhookSignature.header(timestamp: 1_767_225_600, body: Self.body, secrets: ["whsec_test"])
            == "t=1767225600,v1=\(expected)")
    }

    @Test("a receiver accepts the body signed with its secret within 5 minutes, and nothing else")
    func verification() {
        let header = WebhookSignature.header(timestamp: 1_767_225_600, body: Self.body, secrets: ["whsec_new", "whsec_old"])
        #expect(header.components(separatedBy: "v1=").count == 3, "both secrets sign during a rotation")
        for secret in ["whsec_new", "whsec_old"] {
            #expect(WebhookSignature.verify(header: header, body: Self.body, secret: secret, now: Self.at))
            #expect(WebhookSignature.verify(header: header, body: Self.body, secret: secret, now: Self.at + 300))
        }
        #expect(!WebhookSignature.verify(header: header, body: Self.body, secret: "whsec_other", now: Self.at))
        #expect(!WebhookSignature.verify(header: header, body: Self.body + [0x20], secret: "whsec_new", now: Self.at))
        #expect(!WebhookSignature.verify(header: header, body: Self.body, secret: "whsec_new", now: Self.at + 301))
        #expect(!WebhookSignature.verify(header: header, body: Self.body, secret: "whsec_new", now: Self.at - 301))
        #expect(!WebhookSignature.verify(header: "v1=" + header, body: Self.body, secret: "whsec_new", now: Self.at))
        #expect(!WebhookSignature.verify(header: "", body: Self.body, secret: "whsec_new", now: Self.at))
    }

    @Test("the backoff doubles from 5 s up to an hour; its jitter keeps each delay within its upper half, repeatably for a seed")
    func backoff() {
        let settings = WebhookSettings()
        #expect((1...6).map { settings.backoff(afterFailures: $0) } == [5, 10, 20, 40, 80, 160].map { .seconds($0) })
        #expect(settings.backoff(afterFailures: 11) == .seconds(3600) && settings.backoff(afterFailures: 40) == .seconds(3600))
        let first = WebhookJitter(seed: 7)
        let second = WebhookJitter(seed: 7)
        let delays = (0..<1000).map { _ in first.apply(to: .seconds(10)) }
        #expect(delays == (0..<1000).map { _ in second.apply(to: .seconds(10)) }, "the same seed, the same delays")
        #expect(delays.allSatisfy { $0 >= .seconds(5) && $0 <= .seconds(10) })
        #expect(Set(delays).count > 900, "spread, not constant")
        // Ten failures take at least half of 5 + 10 + … + 2560 s: a pause after 10 failures needs 40 minutes or more.
        let total = (1...10).map { settings.backoff(afterFailures: $0) }.reduce(Duration.zero, +)
        #expect(total / 2 > .seconds(2400))
    }
}
