import Crypto
import Foundation

/// The secret half of an API key: generated once, shown once, stored only as its SHA-256.
///
/// A secret is `hrld_` followed by 43 base64url characters (32 random bytes), so it is easy to spot in a leaked
/// file. SHA-256 without salt is enough here: the secret is random and long, not a password, and an unsalted hash
/// lets a lookup find the key with one indexed query.
public struct APIKeySecret: Sendable, Hashable, CustomStringConvertible {
    /// The prefix of every secret.
    public static let prefix = "hrld_"

    /// The secret text, to hand to the person who created the key, once.
    public let value: String

    /// Wraps a secret someone presented.
    public init(_ value: String) { self.value = value }

    /// A new random secret from the system's cryptographic generator.
    public static func generate() -> APIKeySecret {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let encoded = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return APIKeySecret(prefix + encoded)
    }

    /// The lowercase hex SHA-256 of the secret: what the store keeps and looks up.
    public var hash: String {
        SHA256.hash(data: Data(value.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The first characters, stored to recognise the key in a list.
    public var displayPrefix: String { String(value.prefix(Self.prefix.count + 4)) }

    /// Never the secret.
    public var description: String { "APIKeySecret(\(displayPrefix)…)" }
}
