public import Crypto
import Foundation

/// RFC 8291 message encryption: `Content-Encoding: aes128gcm` (RFC 8188) of one record, for one subscription.
///
/// A fresh P-256 key pair and 16-byte salt per message; `IKM = HKDF(auth, ECDH, "WebPush: info\0" ‖ ua_public ‖
/// as_public, 32)`, then `CEK` and `NONCE` from `HKDF(salt, IKM, …)`; the plaintext and the `0x02` delimiter sealed with
/// AES-128-GCM behind the header `salt ‖ rs ‖ idlen ‖ as_public`. A push service need take no more than 4,096 bytes
/// of body: with the 86-byte header, the delimiter and the 16-byte tag, 3,993 bytes of plaintext.
public enum WebPushEncryption {
    /// The record size the header states, and the most body a push service must take.
    public static let recordSize = 4_096
    /// `salt(16) ‖ rs(4) ‖ idlen(1) ‖ keyid(65)`.
    static let headerSize = 16 + 4 + 1 + 65
    /// The most plaintext one message carries.
    public static let maximumPlaintextBytes = recordSize - headerSize - 1 - 16

    /// Encrypts a message for a subscription.
    /// - Parameters:
    ///   - salt: 16 bytes; random unless given (tests give RFC 8291's).
    ///   - senderKey: the ephemeral key; fresh unless given (tests give RFC 8291's).
    /// - Throws: ``WebPushError`` `payloadTooLarge` past ``maximumPlaintextBytes``.
    public static func encrypt(
        _ plaintext: some Collection<UInt8>, for keys: WebPushSubscriptionKeys, salt: [UInt8]? = nil,
        senderKey: P256.KeyAgreement.PrivateKey? = nil
    ) throws(WebPushError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextBytes else {
            throw WebPushError(
                .payloadTooLarge,
                "The message has \(plaintext.count) bytes: one Web Push record carries at most \(maximumPlaintextBytes) once encrypted. Shorten it, or send a link to fetch the rest.")
        }
        let sender = senderKey ?? P256.KeyAgreement.PrivateKey()
        // Two draws rather than one per byte: each is a getrandom call on Linux.
        let salt = salt ?? Self.randomSalt()
        let senderPublic = Array(sender.publicKey.x963Representation)
        guard let shared = try? sender.sharedSecretFromKeyAgreement(with: keys.publicKey) else {
            throw WebPushError(.invalidSubscriptionKey, "The subscription's p256dh key does not agree a secret: it is not a usable P-256 key.")
        }
        let (key, nonce) = derive(shared: shared, auth: keys.auth, uaPublic: keys.p256dh, asPublic: senderPublic, salt: salt)
        var record = Array(plaintext)
        record.append(0x02)
        // AES-GCM with a 16-byte key and a 12-byte nonce derived above cannot fail.
        let sealed = try! AES.GCM.seal(record, using: key, nonce: nonce)
        var body = salt
        body.reserveCapacity(headerSize + record.count + 16)
        withUnsafeBytes(of: UInt32(recordSize).bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }

    private static func randomSalt() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return withUnsafeBytes(of: (generator.next() as UInt64, generator.next() as UInt64)) { Array($0) }
    }

    /// Opens a body encrypted for a subscription: what a browser does, and the emulator's push service for its inbox.
    /// - Throws: ``WebPushError`` `malformedBody` for a body that is not one `aes128gcm` record, `decryptionFailed` when
    ///   it does not open with these keys.
    public static func decrypt(
        _ body: some Collection<UInt8>, privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8]
    ) throws(WebPushError) -> [UInt8] {
        let body = Array(body)
        guard body.count >= 21 else {
            throw WebPushError(.malformedBody, "The body has \(body.count) bytes: an aes128gcm body starts with a 21-byte header or more.")
        }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17 else {
            throw WebPushError(.malformedBody, "The header's key id has \(idLength) bytes, or the body ends too soon: Web Push's key id is the sender's 65-byte public key.")
        }
        let senderPublic = Array(body[21..<(21 + idLength)])
        let sealed = body[(21 + idLength)...]
        guard sealed.count <= recordSize, recordSize >= 18 else {
            throw WebPushError(.malformedBody, "The body holds more than one record of \(recordSize) bytes: Web Push sends one.")
        }
        guard let senderKey = try? P256.KeyAgreement.PublicKey(x963Representation: senderPublic),
            let shared = try? privateKey.sharedSecretFromKeyAgreement(with: senderKey)
        else {
            throw WebPushError(.malformedBody, "The header's key id is not a P-256 public key.")
        }
        let uaPublic = Array(privateKey.publicKey.x963Representation)
        let (key, nonce) = derive(shared: shared, auth: auth, uaPublic: uaPublic, asPublic: senderPublic, salt: salt)
        guard let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(16), tag: sealed.suffix(16)),
            let opened = try? AES.GCM.open(box, using: key)
        else {
            throw WebPushError(.decryptionFailed, "The body does not open with the subscription's keys: it was encrypted for another subscription, or altered.")
        }
        var record = Array(opened)
        // Padding: zeros after the delimiter; the last record's delimiter is 0x02.
        while record.last == 0 { record.removeLast() }
        guard record.last == 0x02 else {
            throw WebPushError(.malformedBody, "The record does not end with the last record's delimiter (0x02).")
        }
        record.removeLast()
        return record
    }

    private static func derive(
        shared: SharedSecret, auth: [UInt8], uaPublic: [UInt8], asPublic: [UInt8], salt: [UInt8]
    ) -> (SymmetricKey, AES.GCM.Nonce) {
        let info = Array("WebPush: info".utf8) + [0] + uaPublic + asPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: info, outputByteCount: 32)
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonceKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // A 12-byte nonce is always valid.
        let nonce = try! nonceKey.withUnsafeBytes { try AES.GCM.Nonce(data: Array($0)) }
        return (key, nonce)
    }
}
