import Crypto
public import Foundation

/// A per-app AES-256 key for Herald's end-to-end content envelope, with an id so keys can be rotated.
///
/// The server holds it to encrypt; the app's notification service extension holds it (in the keychain) to decrypt.
/// `description` shows only the id.
public struct ContentEncryptionKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A short label carried in every envelope so the receiver picks the right key: letters, digits, `-`, `_`.
    public let id: String
    let key: SymmetricKey

    /// - Throws: ``ContentEnvelopeError`` when the key is not 32 bytes or the id is not 1–32 of `[A-Za-z0-9_-]`.
    public init(id: String, rawKey: some ContiguousBytes) throws(ContentEnvelopeError) {
        try Self.checkID(id)
        let key = SymmetricKey(data: rawKey)
        guard key.bitCount == 256 else {
            throw ContentEnvelopeError(.badKey, "A content key must be 32 bytes (AES-256), but this one is \(key.bitCount / 8).")
        }
        self.id = id
        self.key = key
    }

    /// Reads a key from its base64 (or base64url) text, the form `herald` prints and configuration files hold.
    public init(id: String, base64 text: String) throws(ContentEnvelopeError) {
        guard let data = Data(base64Encoded: text) ?? Base64URL.decode(text) else {
            throw ContentEnvelopeError(.badKey, "The content key is not base64 text: use the value `herald` printed when it made the key.")
        }
        try self.init(id: id, rawKey: data)
    }

    /// A new random key.
    public static func generate(id: String) throws(ContentEncryptionKey.IDError) -> ContentEncryptionKey {
        do {
            try checkID(id)
        } catch {
            throw IDError(message: error.message)
        }
        return try! ContentEncryptionKey(id: id, rawKey: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// The id was not acceptable.
    public struct IDError: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// The key as base64, for configuration. Treat it as a secret.
    public var base64: String { key.withUnsafeBytes { Data($0).base64EncodedString() } }

    public var description: String { "ContentEncryptionKey(id: \(id))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id]) }

    static func checkID(_ id: String) throws(ContentEnvelopeError) {
        let valid = (1...32).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard valid else {
            throw ContentEnvelopeError(.badKeyID, "The key id \"\(id)\" must be 1 to 32 letters, digits, '-' or '_'.")
        }
    }
}
