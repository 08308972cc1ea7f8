import Foundation
import HeraldAPNS
import HeraldCore
import HeraldEmulator
import Testing

/// The Web Push sender against the emulator's push service, over loopback TLS and HTTP/2.
@Suite("Web Push sender against the emulator's push service", .timeLimit(.minutes(2)))
struct WebPushClientTests {
    static let subject = "mailto:push@example.com"

    /// Runs an emulator serving Web Push and a client trusting it, limited to its push service.
    func withService(
        faults: FaultConfiguration = FaultConfiguration(),
        _ body: @Sendable (APNSEmulator, WebPushClient, PushServiceHosts) async throws -> Void
    ) async throws {
        let configuration = EmulatorConfiguration(adminPort: nil, inbox: .recording(capacity: 1_000), faults: faults).servingWebPush()
        try await APNSEmulator.withRunning(configuration) { emulator in
            let port = try #require(emulator.port(for: .production, service: .webPush))
            let hosts = PushServiceHosts(["127.0.0.1:\(port)"])
            let client = WebPushClient.Configuration(
                hosts: hosts, trust: .only(certificatesPEM: try #require(emulator.certificateAuthorityPEM)),
                retry: RetryPolicy(initialBackoff: .milliseconds(5), maximumBackoff: .milliseconds(50)))
            try await WebPushClient.withClient(configuration: client) { client in
                try await body(emulator, client, hosts)
            }
        }
    }

    static func subscribe(_ emulator: APNSEmulator, key: VAPIDKey, hosts: PushServiceHosts) throws
        -> (id: String, subscription: WebPushSubscription)
    {
        let made = try emulator.webPush.subscribe(applicationServerKey: key.publicKeyText)
        return (made.id, try WebPushSubscription(endpoint: made.endpoint, p256dh: made.p256dh, auth: made.auth, hosts: hosts))
    }

    static func message(_ title: String, collapseID: String? = nil) throws -> WebPushMessage {
        try WebPushMessage.declarative(
            from: try Payload(jsonString: #"{"aps":{"alert":{"title":"\#(title)","body":"b"},"badge":2}}"#),
            navigate: "https://example.com/", priority: .considerPower, collapseID: collapseID, now: Date())
    }

    @Test("a declarative message reaches the subscription's inbox decrypted, with its TTL, Urgency and Topic; 200 more over pooled streams all arrive once")
    func delivers() async throws {
        try await withService { emulator, client, hosts in
            let key = VAPIDKey.generate()
            let (id, subscription) = try Self.subscribe(emulator, key: key, hosts: hosts)
            let delivery = await client.send(
                try Self.message("Hello", collapseID: "greeting"), to: subscription, key: key, subject: Self.subject)
            #expect(delivery.result == .accepted && delivery.attempts == 1, "\(delivery)")
            let first = try #require(try emulator.webPush.messages(id).first)
            let json = try JSONValue(parsing: first.payload)
            #expect(json["notification"]?["title"] == "Hello" && json["app_badge"] == 2)
            #expect(first.urgency == "normal" && first.topic == "greeting" && first.ttl == WebPushMessage.defaultTTL)
            #expect(first.subject == Self.subject)

            let results = await withTaskGroup(of: WebPushDelivery.Result.self) { group in
                for n in 0..<200 {
                    group.addTask {
                        await client.send(try! Self.message("n\(n)"), to: subscription, key: key, subject: Self.subject).result
                    }
                }
                return await group.reduce(into: [WebPushDelivery.Result]()) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0 == .accepted })
            let titles = try emulator.webPush.messages(id).compactMap { try JSONValue(parsing: $0.payload)["notification"]?["title"]?.stringValue }
            #expect(Set(titles).count == 201 && titles.count == 201, "each once")
        }
    }

    @Test("429s and 5xx are retried until taken: nothing lost")
    func retries() async throws {
        try await withService(faults: FaultConfiguration(tooManyRequests: 0.2, serviceUnavailable: 0.1)) { emulator, client, hosts in
            let key = VAPIDKey.generate()
            let (id, subscription) = try Self.subscribe(emulator, key: key, hosts: hosts)
            var retried = 0
            for n in 0..<60 {
                let delivery = await client.send(try Self.message("r\(n)"), to: subscription, key: key, subject: Self.subject)
                #expect(delivery.result == .accepted, "\(delivery)")
                if delivery.attempts > 1 { retried += 1 }
            }
            #expect(retried > 0, "the faults were met and retried")
            #expect(try emulator.webPush.messages(id).count == 60)
        }
    }

    @Test("an unsubscribed subscription is 410 and gone, a forgotten one 404 and gone; another key is 403 BadJwtToken, not gone; a host off the list is never contacted")
    func refusals() async throws {
        try await withService { emulator, client, hosts in
            let key = VAPIDKey.generate()
            let (id, subscription) = try Self.subscribe(emulator, key: key, hosts: hosts)
            let wrongKey = await client.send(try Self.message("x"), to: subscription, key: VAPIDKey.generate(), subject: Self.subject)
            #expect(wrongKey.result == .rejected(status: 403, reason: "BadJwtToken") && !wrongKey.subscriptionGone)

            try emulator.webPush.unsubscribe(id)
            let gone = await client.send(try Self.message("x"), to: subscription, key: key, subject: Self.subject)
            #expect(gone.result == .rejected(status: 410, reason: "Unsubscribed") && gone.subscriptionGone)
            emulator.webPush.remove(id)
            let forgotten = await client.send(try Self.message("x"), to: subscription, key: key, subject: Self.subject)
            #expect(forgotten.subscriptionGone, "\(forgotten)")

            let elsewhere = try WebPushSubscription(
                endpoint: "https://web.push.apple.com/abc", p256dh: subscription.keys.p256dhText,
                auth: subscription.keys.authText, hosts: nil)
            let refused = await client.send(try Self.message("x"), to: elsewhere, key: key, subject: Self.subject)
            guard case .failed(let message) = refused.result else { Issue.record("\(refused)"); return }
            #expect(refused.attempts == 0 && message.contains("HERALD_WEB_PUSH_HOSTS"))
            #expect(emulator.webPush.counters.accepted == 0)
        }
    }
}
