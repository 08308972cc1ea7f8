import Crypto
import Foundation
import HeraldCore

/// What the store keeps to check a key's secret: a per-key random salt and HMAC-SHA256(salt, secret).
///
/// API key secrets are random and long (at least 32 characters; generated ones carry 256 bits), not passwords, so a
/// slow password hash would only slow every request without making a guess any likelier: a keyed hash with a random
/// salt per key is enough. It stops precomputed tables and cross-key comparisons, and a database dump reveals
/// neither secrets nor anything that can be checked against a guessed secret without the salt's key. Checking costs
/// one HMAC (about a microsecond).
public struct APIKeyCredential: Sendable, Hashable {
    /// How ``hash`` was computed.
    public enum Scheme: String, Sendable, Hashable {
        /// HMAC-SHA256 keyed with the salt: every key created or re-hashed by this version.
        case hmacSHA256 = "hmac-sha256"
        /// Unsalted SHA-256, as schema version 1 stored keys. Accepted once more, then re-hashed.
        case legacySHA256 = "sha256"
    }

    /// How the hash was computed.
    public var scheme: Scheme
    /// The secret's non-secret lookup id, if it has one (``APIKeySecret/lookupID``).
    public var lookupID: String?
    /// The random salt, as hex; empty for ``Scheme/legacySHA256``.
    public var salt: String
    /// The hash, as lowercase hex.
    public var hash: String

    public init(scheme: Scheme, lookupID: String?, salt: String, hash: String) {
        self.scheme = scheme
        self.lookupID = lookupID
        self.salt = salt
        self.hash = hash
    }

    /// A new credential for a secret, with a fresh random 16-byte salt.
    public static func make(for secret: APIKeySecret) -> APIKeyCredential {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return APIKeyCredential(
            scheme: .hmacSHA256, lookupID: secret.lookupID, salt: Hex.string(salt),
            hash: Hex.string(Self.digest(secret, scheme: .hmacSHA256, salt: salt)))
    }

    /// Whether a presented secret is this key's, compared in constant time.
    public func verifies(_ secret: APIKeySecret) -> Bool {
        guard let salt = Self.bytes(hex: salt), let expected = Self.bytes(hex: hash) else { return false }
        let actual = Self.digest(secret, scheme: scheme, salt: salt)
        guard actual.count == expected.count else { return false }
        return zip(actual, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func digest(_ secret: APIKeySecret, scheme: Scheme, salt: [UInt8]) -> [UInt8] {
        switch scheme {
        case .hmacSHA256:
            Array(HMAC<SHA256>.authenticationCode(for: Data(secret.value.utf8), using: SymmetricKey(data: salt)))
        case .legacySHA256:
            Array(SHA256.hash(data: Data(secret.value.utf8)))
        }
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}

/// An active key with its credential, as a lookup returns it.
public struct StoredAPIKey: Sendable, Hashable {
    public var key: APIKey
    public var credential: APIKeyCredential
}
