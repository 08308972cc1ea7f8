import Crypto
import Foundation
import HeraldCore

/// The secret half of an API key: generated once, shown once, never stored.
///
/// A generated secret is `hrld_<lookup id>_<secret>`: 8 hex digits of random, non-secret lookup id, then 43 base64url
/// characters (32 random bytes). The lookup id finds the key's row with one indexed query; only the part after it
/// is secret. Secrets given in `HERALD_API_KEYS` may be any text of at least ``minimumSecretCharacters`` characters;
/// without the `hrld_<id>_` form they have no lookup id, and the few such keys are each checked in turn.
public struct APIKeySecret: Sendable, Hashable, CustomStringConvertible {
    /// The prefix of every generated secret, so a leaked one is easy to spot.
    public static let prefix = "hrld_"
    /// The fewest characters of secret (after any lookup id) a configured key may have.
    public static let minimumSecretCharacters = 32
    /// The length of a lookup id, in hex digits.
    static let lookupIDLength = 8

    /// The secret text, to hand to the person who created the key, once.
    public let value: String

    /// Wraps a secret someone presented.
    public init(_ value: String) { self.value = value }

    /// A new random secret from the system's cryptographic generator.
    public static func generate() -> APIKeySecret {
        var generator = SystemRandomNumberGenerator()
        let id = (0..<lookupIDLength / 2).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let encoded = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return APIKeySecret(prefix + Hex.string(id) + "_" + encoded)
    }

    /// The lookup id of a `hrld_<8 hex digits>_<secret>` secret; `nil` for any other form.
    public var lookupID: String? {
        guard value.hasPrefix(Self.prefix) else { return nil }
        let rest = value.utf8.dropFirst(Self.prefix.utf8.count)
        let id = rest.prefix(Self.lookupIDLength)
        guard id.count == Self.lookupIDLength,
            id.allSatisfy({
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }),
            rest.dropFirst(Self.lookupIDLength).first == UInt8(ascii: "_")
        else { return nil }
        return String(decoding: id, as: UTF8.self)
    }

    /// How many characters are secret: those after the lookup id, or all of them.
    public var secretCharacterCount: Int {
        lookupID == nil ? value.count : value.count - Self.prefix.count - Self.lookupIDLength - 1
    }

    /// What may be shown to recognise the key in a list: `hrld_<lookup id>`, never a character of the secret.
    public var displayPrefix: String { lookupID.map { Self.prefix + $0 } ?? "" }

    /// Never the secret.
    public var description: String { "APIKeySecret(\(displayPrefix)…)" }

}
