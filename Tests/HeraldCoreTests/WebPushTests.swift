import Crypto
import Foundation
import Testing

@testable import HeraldCore

/// Web Push's message encryption (RFC 8291) and VAPID (RFC 8292), the sender's and the push service's sides.
@Suite("Web Push: aes128gcm and VAPID")
struct WebPushTests {
    static func bytes(_ text: String) -> [UInt8] { Array(Base64URL.decode(text)!) }

    /// RFC 8291, Appendix A.
    enum RFC8291 {
        static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let receiverPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    @Test("encrypts RFC 8291's example to its bytes exactly, and opens it again")
    func rfcVector() throws {
        let keys = try WebPushSubscriptionKeys(p256dh: RFC8291.receiverPublic, auth: RFC8291.auth)
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(RFC8291.senderPrivate))
        let body = try WebPushEncryption.encrypt(
            RFC8291.plaintext, for: keys, salt: Self.bytes(RFC8291.salt), senderKey: sender)
        #expect(Base64URL.encode(body) == RFC8291.body)
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(RFC8291.receiverPrivate))
        #expect(try WebPushEncryption.decrypt(Self.bytes(RFC8291.body), privateKey: receiver, auth: keys.auth) == RFC8291.plaintext)
    }

    @Test("a fresh key and salt each message: two encryptions differ, both open; an altered body or other keys do not")
    func roundTrip() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { UInt8($0) }
        let keys = try WebPushSubscriptionKeys(p256dh: Array(receiver.publicKey.x963Representation), auth: auth)
        let message = Array(#"{"web_push":8030,"notification":{"title":"Hi","navigate":"https://example.com"}}"#.utf8)
        let first = try WebPushEncryption.encrypt(message, for: keys)
        let second = try WebPushEncryption.encrypt(message, for: keys)
        #expect(first != second && first.count == message.count + 86 + 17)
        #expect(try WebPushEncryption.decrypt(first, privateKey: receiver, auth: auth) == message)
        var altered = first
        altered[altered.count - 1] ^= 1
        #expect(throws: WebPushError.self) { try WebPushEncryption.decrypt(altered, privateKey: receiver, auth: auth) }
        let error = #expect(throws: WebPushError.self) {
            try WebPushEncryption.decrypt(first, privateKey: P256.KeyAgreement.PrivateKey(), auth: auth)
        }
        #expect(error?.code == .decryptionFailed)
        #expect((try? WebPushEncryption.decrypt(Array(first.prefix(20)), privateKey: receiver, auth: auth)) == nil)
    }

    @Test("3,993 bytes fill the 4,096-byte record; one more is refused before anything is sent")
    func recordSize() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = try WebPushSubscriptionKeys(p256dh: Array(receiver.publicKey.x963Representation), auth: Array(repeating: 7, count: 16))
        #expect(WebPushEncryption.maximumPlaintextBytes == 3_993)
        let full = try WebPushEncryption.encrypt(Array(repeating: 0x41, count: 3_993), for: keys)
        #expect(full.count == 4_096)
        let error = #expect(throws: WebPushError.self) {
            try WebPushEncryption.encrypt(Array(repeating: 0x41, count: 3_994), for: keys)
        }
        #expect(error?.code == .payloadTooLarge)
    }

    @Test("a subscription's keys must be what a browser hands out", arguments: [
        ("not base64url!", RFC8291.auth), (String(RFC8291.receiverPublic.dropLast(4)), RFC8291.auth),
        ("A" + String(RFC8291.receiverPublic.dropFirst()), RFC8291.auth), (RFC8291.receiverPublic, "c2hvcnQ"),
    ])
    func subscriptionKeys(p256dh: String, auth: String) {
        let error = #expect(throws: WebPushError.self) { try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth) }
        #expect(error?.code == .invalidSubscriptionKey)
    }

    @Test("a VAPID header verifies as a push service checks it: signature, aud, exp within 24 hours, sub")
    func vapid() throws {
        let key = VAPIDKey.generate()
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let audience = "https://web.push.apple.com"
        let header = try key.authorization(
            audience: audience, subject: "mailto:push@example.com", expiresAt: now.addingTimeInterval(12 * 3600))
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(", k=\(key.publicKeyText)"))
        let claims = try VAPID.verify(authorization: header, audience: audience, now: now)
        #expect(claims.subject == "mailto:push@example.com" && claims.publicKey == key.publicKeyText)
        #expect(try VAPIDKey(text: key.privateKeyText).publicKeyText == key.publicKeyText, "the stored form reads back")

        #expect(throws: WebPushError.self) { try VAPID.verify(authorization: header, audience: "https://fcm.googleapis.com", now: now) }
        #expect(throws: WebPushError.self) { try VAPID.verify(authorization: header, audience: audience, now: now.addingTimeInterval(13 * 3600)) }
        let long = try key.authorization(audience: audience, subject: "https://example.com/contact", expiresAt: now.addingTimeInterval(25 * 3600))
        #expect(throws: WebPushError.self) { try VAPID.verify(authorization: long, audience: audience, now: now) }
        let other = VAPIDKey.generate()
        let forged = header.replacingOccurrences(of: key.publicKeyText, with: other.publicKeyText)
        #expect(throws: WebPushError.self) { try VAPID.verify(authorization: forged, audience: audience, now: now) }
        for subject in ["admin@localhost", "mailto:push @example.com", "<mailto:push@example.com>", "http://example.com"] {
            let error = #expect(throws: WebPushError.self) {
                try key.authorization(audience: audience, subject: subject, expiresAt: now)
            }
            #expect(error?.code == .badSubject, "\(subject)")
        }
        #expect(throws: WebPushError.self) {
            try key.authorization(audience: "https://web.push.apple.com/abc", subject: "mailto:a@b.c", expiresAt: now)
        }
        #expect(VAPID.audience(of: URL(string: "https://web.push.apple.com/QGuQyavXutnMH6Ig2uYOJDwA")!) == audience)
        #expect(!"\(key)".contains(key.privateKeyText), "the private half stays out of descriptions")
    }
}

@Suite("Web Push: subscriptions")
struct WebPushSubscriptionTests {
    static let keys = (p256dh: WebPushTests.RFC8291.receiverPublic, auth: WebPushTests.RFC8291.auth)

    @Test("endpoints of the known push services are taken, with their origin as VAPID audience", arguments: [
        "https://web.push.apple.com/QGuQyavXutnMH6Ig2uYOJDwA", "https://fcm.googleapis.com/fcm/send/dBx1:APA91b",
        "https://updates.push.services.mozilla.com/wpush/v2/gAAAAA", "https://wns2-par02p.notify.windows.com/w/?token=BQYAAAD",
        "https://WEB.PUSH.APPLE.COM:443/abc",
    ])
    func known(endpoint: String) throws {
        let subscription = try WebPushSubscription(endpoint: endpoint, p256dh: Self.keys.p256dh, auth: Self.keys.auth)
        #expect(subscription.audience.hasPrefix("https://") && !subscription.audience.dropFirst(8).contains("/"))
    }

    @Test("anything else is refused before it is stored: the server posts only to push services", arguments: [
        ("http://web.push.apple.com/abc", WebPushError.Code.invalidEndpoint),
        ("https://127.0.0.1/push", .endpointNotAllowed),
        ("https://web.push.apple.com.evil.example/abc", .endpointNotAllowed),
        ("https://notify.windows.com/abc", .endpointNotAllowed),
        ("https://evilnotify.windows.com/abc", .endpointNotAllowed),
        ("https://user:pw@web.push.apple.com/abc", .invalidEndpoint),
        ("https://web.push.apple.com:8443/abc", .endpointNotAllowed),
        ("https://web.push.apple.com/abc#x", .invalidEndpoint),
        ("https://web.push.apple.com/a\u{0}b", .invalidEndpoint),
        ("https://web.push.apple.com/" + String(repeating: "a", count: 2_100), .invalidEndpoint),
        ("not a url", .invalidEndpoint),
    ])
    func refused(endpoint: String, code: WebPushError.Code) {
        let error = #expect(throws: WebPushError.self) {
            try WebPushSubscription(endpoint: endpoint, p256dh: Self.keys.p256dh, auth: Self.keys.auth)
        }
        #expect(error?.code == code, "\(endpoint.prefix(60))")
    }

    @Test("the allow-list is configurable: exact hosts, *.domain, and host:port for a push service on another port")
    func configurable() throws {
        let hosts = try #require(PushServiceHosts(list: "push.example.com, *.push.example.net,127.0.0.1:7490"))
        #expect(hosts.allows("push.example.com") && hosts.allows("a.push.example.net") && !hosts.allows("push.example.net"))
        #expect(hosts.allows("push.example.com", port: 443) && !hosts.allows("push.example.com", port: 8443))
        #expect(hosts.allows("127.0.0.1", port: 7490) && !hosts.allows("127.0.0.1") && !hosts.allows("127.0.0.1", port: 7491))
        _ = try WebPushSubscription(
            endpoint: "https://push.example.com/s/1", p256dh: Self.keys.p256dh, auth: Self.keys.auth, hosts: hosts)
        _ = try WebPushSubscription(
            endpoint: "https://127.0.0.1:7490/push/1", p256dh: Self.keys.p256dh, auth: Self.keys.auth, hosts: hosts)
        for bad in ["", " , ", "a b", "*.*.x", "x:", "x:0", "x:99999", "x:1:2", "http://x"] {
            #expect(PushServiceHosts(list: bad) == nil, "\(bad)")
        }
    }

    @Test("a subscription's registry token is the SHA-256 of its endpoint: the same endpoint, the same device")
    func token() throws {
        let endpoint = "https://web.push.apple.com/QGuQyavXutnMH6Ig2uYOJDwA"
        let first = try WebPushSubscription(endpoint: endpoint, p256dh: Self.keys.p256dh, auth: Self.keys.auth)
        // `printf %s <endpoint> | sha256sum`
        #expect(first.token.hex == "473b2b7f3700c57cee9e7db592cdc8a19e07b9d7c32484d877b71c87edcf487a")
        #expect(first.token == WebPushSubscription.token(ofEndpoint: endpoint))
        #expect(first.token != WebPushSubscription.token(ofEndpoint: endpoint + "x"))
    }
}
