public import Crypto
public import Foundation

/// Checks provider tokens the way APNs does (apns-protocol.md §3.1): what the emulator uses to authenticate requests.
///
/// Accepts what APNs is known to accept: the JWS `r‖s` signature and a DER signature, `iat` as a number or a digit
/// string, and extra header or claim fields such as `typ`. Rejects everything else with the reason APNs would give.
/// Per-connection rules (the 20-minute refresh limit, one team per connection) belong to the connection, not here.
public struct ProviderTokenVerifier: Sendable {
    /// A key APNs would trust: its public half and what it may be used for.
    public struct TrustedKey: Sendable, Hashable {
        public let keyID: String
        public let teamID: String
        /// The public key as raw x‖y bytes (for hashing); see ``publicKey``.
        let publicKeyBytes: Data
        /// The environment the key is restricted to; `nil` for a key that works in both (a legacy team key).
        public let environment: APNSEnvironment?
        /// The bundle ids the key may send to; `nil` for every app of the team.
        public let bundleIDs: Set<String>?

        public init(
            keyID: String, teamID: String, publicKey: P256.Signing.PublicKey, environment: APNSEnvironment? = nil,
            bundleIDs: Set<String>? = nil
        ) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyBytes = publicKey.rawRepresentation
            self.environment = environment
            self.bundleIDs = bundleIDs
        }

        /// Trusts the public half of a signing key.
        public init(_ key: ProviderSigningKey, environment: APNSEnvironment? = nil, bundleIDs: Set<String>? = nil) {
            self.init(keyID: key.keyID, teamID: key.teamID, publicKey: key.publicKey, environment: environment,
                      bundleIDs: bundleIDs)
        }

        public var publicKey: P256.Signing.PublicKey {
            // The bytes came from a valid public key in init.
            try! P256.Signing.PublicKey(rawRepresentation: publicKeyBytes)
        }

        /// Whether the key may send to a topic (its bundle id, whatever the push-type suffix).
        public func covers(bundleID: String) -> Bool { bundleIDs?.contains(bundleID) ?? true }
    }

    /// A token that passed every check.
    public struct Verified: Sendable, Hashable {
        public let key: TrustedKey
        public let issuedAt: Date
        /// The JWT text, to tell a changed token from a repeated one.
        public let jwt: String
    }

    private let keys: [String: (TrustedKey, P256.Signing.PublicKey)]
    /// Tokens older than this are `ExpiredProviderToken`. APNs: one hour.
    public let maximumAge: TimeInterval
    /// Tokens issued further than this in the future are `InvalidProviderToken`.
    public let allowedClockSkew: TimeInterval

    public init(trustedKeys: [TrustedKey], maximumAge: TimeInterval = 3600, allowedClockSkew: TimeInterval = 60) {
        var keys = [String: (TrustedKey, P256.Signing.PublicKey)]()
        for key in trustedKeys { keys[key.keyID] = (key, key.publicKey) }
        self.keys = keys
        self.maximumAge = maximumAge
        self.allowedClockSkew = allowedClockSkew
    }

    /// Verifies the value of an `authorization` header (`bearer <jwt>`).
    /// - Throws: ``ProviderTokenError`` carrying `MissingProviderToken`, `InvalidProviderToken` or
    ///   `ExpiredProviderToken`.
    public func verify(authorization: String?, now: Date) throws(ProviderTokenError) -> Verified {
        guard let authorization, !authorization.isEmpty else {
            throw ProviderTokenError(.missingProviderToken, "There is no authorization header: send \"authorization: bearer <provider token>\".")
        }
        let scheme = authorization.prefix(7)
        guard scheme.lowercased() == "bearer " else {
            throw ProviderTokenError(.missingProviderToken, "The authorization header does not start with \"bearer \".")
        }
        let jwt = authorization.dropFirst(7).drop(while: { $0 == " " })
        guard !jwt.isEmpty else {
            throw ProviderTokenError(.missingProviderToken, "The authorization header has no token after \"bearer\".")
        }
        return try verify(jwt: String(jwt), now: now)
    }

    /// Verifies a compact JWS.
    public func verify(jwt: String, now: Date) throws(ProviderTokenError) -> Verified {
        let segments = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw ProviderTokenError(.invalidProviderToken, "The provider token is not three base64url segments separated by dots.")
        }
        guard let headerData = Base64URL.decode(segments[0]), let header = try? JSONValue(parsing: headerData),
            case .object(let headerFields) = header
        else { throw ProviderTokenError(.invalidProviderToken, "The provider token's header is not a base64url JSON object.") }
        guard let claimsData = Base64URL.decode(segments[1]), let claims = try? JSONValue(parsing: claimsData),
            case .object(let claimFields) = claims
        else { throw ProviderTokenError(.invalidProviderToken, "The provider token's claims are not a base64url JSON object.") }
        guard headerFields["alg"]?.stringValue == "ES256" else {
            throw ProviderTokenError(.invalidProviderToken, "The provider token's alg is not ES256, the only algorithm APNs accepts.")
        }
        guard let keyID = headerFields["kid"]?.stringValue, !keyID.isEmpty else {
            throw ProviderTokenError(.invalidProviderToken, "The provider token's header has no kid (key id).")
        }
        guard let issuer = claimFields["iss"]?.stringValue, !issuer.isEmpty else {
            throw ProviderTokenError(.invalidProviderToken, "The provider token's claims have no iss (team id).")
        }
        let issuedAtSeconds: Int
        switch claimFields["iat"] {
        case .integer(let seconds)?:
            issuedAtSeconds = seconds
        case .string(let digits)? where !digits.isEmpty && digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }):
            guard let seconds = Int(digits) else { fallthrough }
            issuedAtSeconds = seconds
        default:
            throw ProviderTokenError(.invalidProviderToken, "The provider token's claims have no iat as whole seconds since 1970.")
        }
        guard let (trusted, publicKey) = keys[keyID] else {
            throw ProviderTokenError(.invalidProviderToken, "The key id \(keyID) is not a key APNs knows for this team.")
        }
        guard trusted.teamID == issuer else {
            throw ProviderTokenError(.invalidProviderToken, "The key \(keyID) belongs to team \(trusted.teamID), but the token's iss is \(issuer).")
        }
        guard let signatureBytes = Base64URL.decode(segments[2]), !signatureBytes.isEmpty else {
            throw ProviderTokenError(.invalidProviderToken, "The provider token has no signature.")
        }
        let signature: P256.Signing.ECDSASignature?
        if signatureBytes.count == 64 {
            signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        } else {
            // APNs also accepts DER signatures (Java's SHA256withECDSA, Apple's own sample).
            signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes)
        }
        let signingInput = Data(jwt.utf8.prefix(segments[0].utf8.count + 1 + segments[1].utf8.count))
        guard let signature, publicKey.isValidSignature(signature, for: signingInput) else {
            throw ProviderTokenError(.invalidProviderToken, "The provider token's signature does not verify with key \(keyID): sign with the .p8 key that belongs to this key id.")
        }
        let issuedAt = Date(timeIntervalSince1970: Double(issuedAtSeconds))
        let age = now.timeIntervalSince(issuedAt)
        if age > maximumAge {
            throw ProviderTokenError(.expiredProviderToken, "The provider token was issued \(Int(age)) seconds ago; APNs accepts tokens up to one hour old: sign a new one.")
        }
        if -age > allowedClockSkew {
            throw ProviderTokenError(.invalidProviderToken, "The provider token was issued \(Int(-age)) seconds in the future: check the sender's clock (iat is in seconds, not milliseconds).")
        }
        return Verified(key: trusted, issuedAt: issuedAt, jwt: jwt)
    }
}

/// Why a provider token was refused, with the reason APNs answers.
public struct ProviderTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `MissingProviderToken`, `InvalidProviderToken` or `ExpiredProviderToken`.
    public let reason: APNSReason
    public let message: String

    init(_ reason: APNSReason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason): \(message)" }
}
