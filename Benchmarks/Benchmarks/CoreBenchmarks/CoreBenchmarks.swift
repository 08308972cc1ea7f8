import Benchmark
import CoreFixtures
import Crypto
import Foundation
import HeraldCore
import HeraldTesting

// Hot paths of HeraldCore, each beside a baseline in the same run so docs/benchmarks.md can quote ratios.
// Results are reported per operation: each sample runs `scaledIterations` operations.

let payload = CoreFixtures.payload
let topic = CoreFixtures.topic

/// The same payload as a Codable value, for Foundation's encoder and decoder.
struct CodablePayload: Codable {
    struct APS: Codable {
        struct Alert: Codable {
            var title: String
            var body: String
        }

        var alert: Alert
        var badge: Int
        var sound: String
        var threadID: String

        enum CodingKeys: String, CodingKey {
            case alert, badge, sound
            case threadID = "thread-id"
        }
    }

    var aps: APS
    var orderID: String
}

let codablePayload = CodablePayload(
    aps: .init(
        alert: .init(
            title: "Your order has shipped",
            body: "Order A-1042 left our warehouse today and should arrive on Thursday."),
        badge: 3, sound: "default", threadID: "orders"),
    orderID: "A-1042-7731")

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal, .throughput],
        timeUnits: .nanoseconds,
        // Exact counts rather than thousands, so small differences show.
        units: [.instructions: .count, .mallocCountTotal: .count],
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000
    )

    // MARK: Payload encoding

    let notification = PushNotification(payload, topic: topic, priority: .immediate)
    Benchmark("Payload.encode+validate") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try notification.prepare())
        }
    }

    Benchmark("Baseline.JSONEncoder.encode") { benchmark in
        let encoder = JSONEncoder()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(codablePayload))
        }
    }

    let foundationObject = try! JSONSerialization.jsonObject(with: Data(payload.jsonBytes()))
    Benchmark("Baseline.JSONSerialization.encode") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try JSONSerialization.data(withJSONObject: foundationObject))
        }
    }

    // MARK: Payload decoding (raw bodies, as the emulator and server receive them)

    let rawBody = payload.jsonBytes()
    let rawNotification = PushNotification(body: .raw(rawBody), pushType: .alert, topic: topic, priority: .immediate)
    Benchmark("Payload.decode+validate") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try rawNotification.prepare())
        }
    }

    let rawData = Data(rawBody)
    Benchmark("Baseline.JSONDecoder.decode") { benchmark in
        let decoder = JSONDecoder()
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode(CodablePayload.self, from: rawData))
        }
    }

    Benchmark("Baseline.JSONSerialization.decode") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try JSONSerialization.jsonObject(with: rawData))
        }
    }

    // MARK: Provider tokens

    let key = TestSigningKeys.make()
    let cache = ProviderTokenCache(key: key)
    _ = cache.currentToken()
    Benchmark("ProviderTokenCache.hit") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(cache.currentToken())
        }
    }

    // A miss is one ES256 signature, thousands of times slower than a hit, so it runs one per sample.
    Benchmark("ProviderTokenCache.miss", configuration: .init(scalingFactor: .one, maxIterations: 2_000)) { _ in
        blackHole(key.signToken(issuedAt: Date()))
    }

    // MARK: Web Push

    // One message's encryption for one subscription (RFC 8291): Herald's, and the same swift-crypto operations called
    // directly — a fresh P-256 key, ECDH, two HKDF rounds (three derivations), AES-128-GCM over one record — as the
    // floor. The subscription is a browser's: its own key pair and a 16-byte auth secret.
    let browser = P256.KeyAgreement.PrivateKey()
    let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
    let subscriptionKeys = try! WebPushSubscriptionKeys(
        p256dh: Base64URL.encode(browser.publicKey.x963Representation), auth: Base64URL.encode(auth))
    let webMessage = try! WebPushMessage.declarative(
        from: payload, navigate: "https://example.com/orders/A-1042", priority: .immediate, now: Date())
    Benchmark("WebPush.encrypt", configuration: .init(scalingFactor: .one, maxIterations: 5_000)) { _ in
        blackHole(try WebPushEncryption.encrypt(webMessage.payload, for: subscriptionKeys))
    }
    let uaPublic = Array(browser.publicKey.x963Representation)
    let recordInfo = Array("Content-Encoding: aes128gcm".utf8) + [0]
    let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0]
    Benchmark("Baseline.swift-crypto.aes128gcm", configuration: .init(scalingFactor: .one, maxIterations: 5_000)) { _ in
        let sender = P256.KeyAgreement.PrivateKey()
        let senderPublic = Array(sender.publicKey.x963Representation)
        let shared = try sender.sharedSecretFromKeyAgreement(with: browser.publicKey)
        let ikm = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: auth, sharedInfo: Array("WebPush: info".utf8) + [0] + uaPublic + senderPublic,
            outputByteCount: 32)
        var random = SystemRandomNumberGenerator()
        let salt = withUnsafeBytes(of: (random.next() as UInt64, random.next() as UInt64)) { Array($0) }
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: recordInfo, outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: nonceInfo, outputByteCount: 12)
        let sealed = try AES.GCM.seal(
            webMessage.payload + [0x02], using: key, nonce: try nonce.withUnsafeBytes { try AES.GCM.Nonce(data: Array($0)) })
        blackHole(sealed)
    }
    Benchmark("WebPushMessage.declarative") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(
                try WebPushMessage.declarative(
                    from: payload, navigate: "https://example.com/orders/A-1042", priority: .immediate, now: Date()))
        }
    }

    // MARK: Device tokens

    Benchmark("DeviceToken.parse.64hex") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DeviceToken(hex: CoreFixtures.shortTokenHex))
        }
    }

    Benchmark("DeviceToken.parse.200hex") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DeviceToken(hex: CoreFixtures.longTokenHex))
        }
    }
}
