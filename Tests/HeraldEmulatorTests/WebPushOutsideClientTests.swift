import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Testing

extension OutsideClientTests {
    @Test("curl --http2 pushes to the emulator's Web Push service: 201 and a decrypted inbox for a good push; 403 BadJwtToken, 400, 413, 410 and 404 as a push service answers")
    func curlWebPush() async throws {
        let ca = directory.appendingPathComponent("ca.pem").path
        let configuration = EmulatorConfiguration(
            adminPort: 0, tls: .generated(caFile: URL(fileURLWithPath: ca)), trustedKeys: [.init(key)]
        ).servingWebPush()
        try await APNSEmulator.withRunning(configuration) { emulator in
            let admin = "http://127.0.0.1:\(emulator.adminPort!)"
            let vapid = VAPIDKey.generate()
            let made = try await curl(["-X", "POST", "-d", #"{"applicationServerKey": "\#(vapid.publicKeyText)"}"#, "\(admin)/subscriptions"])
            #expect(made.status == 201, "\(made)")
            let json = try JSONValue(parsing: Array(made.body.utf8))
            let subscription = try WebPushSubscription(
                endpoint: try #require(json["endpoint"]?.stringValue), p256dh: try #require(json["keys"]?["p256dh"]?.stringValue),
                auth: try #require(json["keys"]?["auth"]?.stringValue), hosts: nil)
            let id = try #require(json["id"]?.stringValue)
            #expect(subscription.audience == "https://127.0.0.1:\(emulator.port(for: .production, service: .webPush)!)")

            func push(
                _ payload: String = #"{"web_push":8030,"notification":{"title":"Hi","navigate":"https://example.com/"}}"#,
                signer: VAPIDKey? = nil, audience: String? = nil, headers: [String] = ["ttl: 60", "urgency: high", "topic: scores"],
                body: [UInt8]? = nil
            ) async throws -> (status: Int, body: String) {
                let file = directory.appendingPathComponent("push-\(UUID()).bin")
                let bytes = try body ?? WebPushEncryption.encrypt(Array(payload.utf8), for: subscription.keys)
                try Data(bytes).write(to: file)
                let authorization = try (signer ?? vapid).authorization(
                    audience: audience ?? subscription.audience, subject: "mailto:push@example.com",
                    expiresAt: Date().addingTimeInterval(3600))
                var arguments = ["--http2", "--cacert", ca, "-H", "authorization: \(authorization)", "-H", "content-encoding: aes128gcm"]
                for header in headers { arguments += ["-H", header] }
                let answer = try await curl(arguments + ["--data-binary", "@\(file.path)", subscription.endpoint.absoluteString])
                return (answer.status, answer.body)
            }

            let accepted = try await push()
            #expect(accepted.status == 201, "\(accepted)")
            let inbox = try JSONValue(parsing: Array(try await curl(["\(admin)/subscriptions/\(id)/messages"]).body.utf8))
            let message = try #require(inbox.arrayValue?.first)
            #expect(message["payload"]?["notification"]?["title"] == "Hi", "decrypted with the browser's key: \(message)")
            #expect(message["ttl"] == 60 && message["urgency"] == "high" && message["topic"] == "scores")
            #expect(message["subject"] == "mailto:push@example.com")

            for (label, answer, status, reason) in [
                ("another key", try await push(signer: VAPIDKey.generate()), 403, "BadJwtToken"),
                ("another origin", try await push(audience: "https://web.push.apple.com"), 403, "BadJwtToken"),
                ("no TTL", try await push(headers: []), 400, "BadTtl"),
                ("a bad urgency", try await push(headers: ["ttl: 0", "urgency: urgent"]), 400, "BadUrgency"),
                ("a long topic", try await push(headers: ["ttl: 0", "topic: \(String(repeating: "a", count: 33))"]), 400, "BadWebPushTopic"),
                ("4,097 bytes", try await push(body: Array(repeating: 1, count: 4_097)), 413, "PayloadTooLarge"),
                ("a body for other keys", try await push(body: Array(repeating: 1, count: 200)), 400, "BadPayload"),
            ] {
                #expect(answer.status == status && answer.body.contains(reason), "\(label): \(answer)")
            }

            #expect(try emulator.webPush.messages(id).count == 1, "nothing refused reached the inbox")
            #expect(try await curl(["-X", "POST", "\(admin)/subscriptions/\(id)/unsubscribe"]).status == 200)
            let gone = try await push()
            #expect(gone.status == 410, "an unsubscribed browser: \(gone)")
            #expect(try await curl(["-X", "DELETE", "\(admin)/subscriptions/\(id)"]).status == 204)
            #expect(try await push().status == 404, "a subscription the service never knew")

            // Many at once, for load tests: one key pair, the endpoints listed.
            let many = try await curl(["-X", "POST", "-d", #"{"count": 3, "applicationServerKey": "\#(vapid.publicKeyText)"}"#, "\(admin)/subscriptions"])
            let manyJSON = try JSONValue(parsing: Array(many.body.utf8))
            #expect(many.status == 201 && manyJSON["endpoints"]?.arrayValue?.count == 3, "\(many)")
            #expect(manyJSON["keys"]?["p256dh"]?.stringValue?.isEmpty == false && manyJSON["keys"]?["auth"] != nil)
            let tooMany = try await curl(["-X", "POST", "-d", #"{"count": 0}"#, "\(admin)/subscriptions"])
            #expect(tooMany.status == 400 && tooMany.body.contains("1 to 1,000,000"), "\(tooMany)")

            let counters = try JSONValue(parsing: Array(try await curl(["\(admin)/counters"]).body.utf8))
            #expect(counters["webPush"]?["accepted"] == 1, "\(counters)")
            #expect(counters["webPush"]?["rejected"]?["BadJwtToken"] == 2 && counters["webPush"]?["rejected"]?["Unsubscribed"] == 1)
        }
    }
}
