import Foundation
import HeraldCore
import Testing

@Suite("Content encryption envelope")
struct EncryptionTests {
    let key = try! ContentEncryptionKey.generate(id: "app-2026")

    @Test("bytes round trip through an envelope")
    func roundTrip() throws {
        let plaintext = Data("Meet the agent at the bridge at midnight".utf8)
        let envelope = ContentEnvelope.seal(plaintext, with: key)
        #expect(envelope.hasPrefix("hx1.app-2026."))
        #expect(!envelope.contains("bridge"))
        #expect(try ContentEnvelope.open(envelope, keys: [key]) == plaintext)
        #expect(ContentEnvelope.seal(plaintext, with: key) != envelope, "every envelope has its own nonce")
    }

    @Test("tampered ciphertext is rejected")
    func tampered() throws {
        let envelope = ContentEnvelope.seal(Data("secret".utf8), with: key)
        var data = try #require(Base64URL.decode(envelope.split(separator: ".")[2]))
        data[14] ^= 0x01
        let altered = "hx1.app-2026." + Base64URL.encode(data)
        #expect {
            try ContentEnvelope.open(altered, keys: [key])
        } throws: { ($0 as? ContentEnvelopeError)?.code == .authenticationFailed }
        // Relabelling the envelope with another key id is caught too.
        let other = try ContentEncryptionKey(id: "other", rawKey: Data(repeating: 7, count: 32))
        let relabelled = "hx1.other." + envelope.split(separator: ".")[2]
        #expect {
            try ContentEnvelope.open(relabelled, keys: [other])
        } throws: { ($0 as? ContentEnvelopeError)?.code == .authenticationFailed }
    }

    @Test("a wrong key is rejected, and an unknown key id is named")
    func wrongKey() throws {
        let envelope = ContentEnvelope.seal(Data("secret".utf8), with: key)
        let impostor = try ContentEncryptionKey(id: "app-2026", rawKey: Data(repeating: 1, count: 32))
        #expect {
            try ContentEnvelope.open(envelope, keys: [impostor])
        } throws: { ($0 as? ContentEnvelopeError)?.code == .authenticationFailed }
        let stranger = try ContentEncryptionKey(id: "2025", rawKey: Data(repeating: 1, count: 32))
        #expect {
            try ContentEnvelope.open(envelope, keys: [stranger])
        } throws: { error in
            guard let error = error as? ContentEnvelopeError else { return false }
            return error.code == .unknownKey && error.message.contains("app-2026")
        }
        #expect {
            try ContentEnvelope.open("hx2.a.b", keys: [key])
        } throws: { ($0 as? ContentEnvelopeError)?.code == .malformed }
    }

    @Test("keys are 32 bytes with a short id and never print their bytes")
    func keys() throws {
        #expect(throws: ContentEnvelopeError.self) { try ContentEncryptionKey(id: "k", rawKey: Data(count: 16)) }
        #expect(throws: ContentEnvelopeError.self) { try ContentEncryptionKey(id: "bad id", rawKey: Data(count: 32)) }
        let restored = try ContentEncryptionKey(id: key.id, base64: key.base64)
        #expect(try ContentEnvelope.open(ContentEnvelope.seal(Data("x".utf8), with: key), keys: [restored]) == Data("x".utf8))
        #expect(!"\(key)".contains(key.base64) && !String(reflecting: key).contains(key.base64))
    }

    @Test("a payload's alert and chosen custom keys are sealed and restored exactly")
    func payload() throws {
        var original = Payload(alert: AlertContent(title: "Agent 13", body: "The eagle lands at dawn"), badge: 2)
        original.custom = ["target": "bridge", "public": 1]
        let encrypted = try original.encryptingContent(with: key, customKeys: ["target", "absent"])
        #expect(encrypted.hasEncryptedContent)
        #expect(encrypted.aps.mutableContent)
        #expect(encrypted.aps.alert == .content(Payload.defaultEncryptedPlaceholder))
        #expect(encrypted.custom["target"] == nil && encrypted.custom["public"] == 1)
        #expect(encrypted.aps.badge == 2)
        let wire = encrypted.jsonString
        #expect(!wire.contains("eagle") && !wire.contains("bridge") && !wire.contains("Agent"))
        // The encrypted payload is still a valid alert push.
        _ = try PushNotification(encrypted, topic: "com.example.app").prepare()

        let received = try Payload(jsonString: wire)
        #expect(try received.decryptingContent(using: [key]) == original)
        #expect(throws: ContentEnvelopeError.self) { try original.decryptingContent(using: [key]) }
        #expect(throws: ContentEnvelopeError.self) { try Payload.background().encryptingContent(with: key) }
        let plain = Payload(aps: APS(alert: .body("plain body")))
        #expect(try plain.encryptingContent(with: key).decryptingContent(using: [key]) == plain)
    }
}
