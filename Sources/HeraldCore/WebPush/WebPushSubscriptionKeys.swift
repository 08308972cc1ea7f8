import Crypto
import Foundation

/// The keys a browser hands out with a push subscription (`PushSubscription.toJSON().keys`): the user agent's P-256
/// public key (`p256dh`, 65 bytes uncompressed) and its 16-byte authentication secret (`auth`), both base64url.
/// What RFC 8291 encrypts each message for. The secret stays out of descriptions.
public struct WebPushSubscriptionKeys: Sendable, Hashable, CustomStringConvertible {
    /// The user agent's public key, as its 65 uncompressed bytes.
    public let p256dh: [UInt8]
    /// The authentication secret.
    public let auth: [UInt8]

    let publicKey: P256.KeyAgreement.PublicKey

    /// Reads the keys as a subscription's JSON gives them.
    /// - Throws: ``WebPushError`` `invalidSubscriptionKey`, naming the key and what it must be.
    public init(p256dh: String, auth: String) throws(WebPushError) {
        guard let key = Base64URL.decode(p256dh) else {
            throw WebPushError(.invalidSubscriptionKey, "keys.p256dh is not base64url: send PushSubscription.toJSON().keys.p256dh as it is.")
        }
        guard let secret = Base64URL.decode(auth) else {
            throw WebPushError(.invalidSubscriptionKey, "keys.auth is not base64url: send PushSubscription.toJSON().keys.auth as it is.")
        }
        try self.init(p256dh: Array(key), auth: Array(secret))
    }

    /// The keys as bytes.
    public init(p256dh: [UInt8], auth: [UInt8]) throws(WebPushError) {
        guard p256dh.count == 65, p256dh.first == 0x04,
            let publicKey = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        else {
            throw WebPushError(
                .invalidSubscriptionKey,
                "keys.p256dh has \(p256dh.count) bytes that are not a P-256 public key: a browser's is 65 bytes, uncompressed (starting 0x04).")
        }
        guard auth.count == 16 else {
            throw WebPushError(
                .invalidSubscriptionKey, "keys.auth has \(auth.count) bytes: a browser's authentication secret has 16.")
        }
        self.p256dh = p256dh
        self.auth = auth
        self.publicKey = publicKey
    }

    /// As a subscription's JSON gives them.
    public var p256dhText: String { Base64URL.encode(p256dh) }
    public var authText: String { Base64URL.encode(auth) }

    public var description: String { "WebPushSubscriptionKeys(p256dh: \(p256dhText.prefix(12))…, auth: redacted)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.p256dh == rhs.p256dh && lhs.auth == rhs.auth }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(p256dh)
        hasher.combine(auth)
    }
}
