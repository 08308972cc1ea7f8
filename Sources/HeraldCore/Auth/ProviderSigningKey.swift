public import Crypto
public import Foundation

/// An APNs token-authentication key: the `.p8` file from the developer account with its Key ID and Team ID.
///
/// The private key never appears in `description`, `debugDescription` or `dump` output.
public struct ProviderSigningKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The 10-character Key ID shown next to the key in the developer account (the JWT's `kid`).
    public let keyID: String
    /// The 10-character Team ID (the JWT's `iss`).
    public let teamID: String
    let privateKey: P256.Signing.PrivateKey

    /// Reads a key from the PEM text of a `.p8` file (PKCS#8, P-256).
    /// - Throws: ``ProviderKeyError`` when the text is not a P-256 PKCS#8 key or an id is malformed.
    public init(pem: String, keyID: String, teamID: String) throws(ProviderKeyError) {
        try Self.checkIdentifier(keyID, kind: .keyID)
        try Self.checkIdentifier(teamID, kind: .teamID)
        do {
            self.privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw ProviderKeyError(.unreadableKey, message: "The key is not a P-256 private key in PKCS#8 PEM form (-----BEGIN PRIVATE KEY-----): use the .p8 file downloaded from the Keys page of your Apple developer account.")
        }
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Reads a `.p8` file. The Key ID defaults to the one in Apple's file name, `AuthKey_<KEYID>.p8`.
    /// - Throws: ``ProviderKeyError`` when the file cannot be read, has no key id to infer, or holds no P-256 key.
    public init(contentsOf file: URL, keyID: String? = nil, teamID: String) throws(ProviderKeyError) {
        guard let resolvedKeyID = keyID ?? Self.keyID(fromFileName: file.lastPathComponent) else {
            throw ProviderKeyError(.missingKeyID, message: "No key id given and \"\(file.lastPathComponent)\" is not named AuthKey_<KEYID>.p8: pass the 10-character Key ID shown next to the key in your developer account.")
        }
        let pem: String
        do {
            pem = try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw ProviderKeyError(.unreadableFile, message: "Cannot read the key file \(file.path): check the path and its permissions.")
        }
        try self.init(pem: pem, keyID: resolvedKeyID, teamID: teamID)
    }

    /// Wraps an in-memory key, for tests and generated keys.
    public init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) throws(ProviderKeyError) {
        try Self.checkIdentifier(keyID, kind: .keyID)
        try Self.checkIdentifier(teamID, kind: .teamID)
        self.privateKey = privateKey
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The Key ID in an Apple key file name: `AuthKey_ABC123DEFG.p8` → `ABC123DEFG`.
    public static func keyID(fromFileName name: String) -> String? {
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let id = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
        return (try? checkIdentifier(id, kind: .keyID)) != nil ? id : nil
    }

    /// The public half, which APNs (or the emulator) verifies signatures with.
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// The public key in PEM form, safe to share.
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// Signs a provider token issued at the given time. Prefer ``ProviderTokenCache``, which reuses tokens as APNs
    /// requires; signing per request gets `TooManyProviderTokenUpdates`.
    public func signToken(issuedAt: Date) -> ProviderToken {
        let seconds = Int(issuedAt.timeIntervalSince1970.rounded(.down))
        var header = JSONWriter(capacity: 48)
        header.beginObject()
        header.key("alg"); header.string("ES256")
        header.key("kid"); header.string(keyID)
        header.endObject()
        var claims = JSONWriter(capacity: 48)
        claims.beginObject()
        claims.key("iss"); claims.string(teamID)
        claims.key("iat"); claims.integer(seconds)
        claims.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        // swift-crypto's ECDSA signing cannot fail for a valid in-memory key and SHA-256 input.
        let signature = try! privateKey.signature(for: Data(signingInput.utf8))
        return ProviderToken(
            jwt: signingInput + "." + Base64URL.encode(signature.rawRepresentation),
            keyID: keyID, teamID: teamID, issuedAt: Date(timeIntervalSince1970: Double(seconds)))
    }

    public var description: String { "ProviderSigningKey(keyID: \(keyID), teamID: \(teamID))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["keyID": keyID, "teamID": teamID]) }

    enum IdentifierKind {
        case keyID, teamID
    }

    static func checkIdentifier(_ id: String, kind: IdentifierKind) throws(ProviderKeyError) {
        let valid = id.utf8.count == 10 && id.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
        guard valid else {
            switch kind {
            case .keyID:
                throw ProviderKeyError(.badKeyID, message: "The key id \"\(id)\" is not 10 letters and digits: use the Key ID shown next to the key in your developer account (it is also in the file name AuthKey_<KEYID>.p8).")
            case .teamID:
                throw ProviderKeyError(.badTeamID, message: "The team id \"\(id)\" is not 10 letters and digits: use the Team ID shown under Membership in your developer account.")
            }
        }
    }
}

/// Why a provider signing key could not be loaded.
public struct ProviderKeyError: CodedError, Hashable {
    public typealias Code = ErrorCode<ProviderKeyError>

    public let code: Code
    public let message: String

    init(_ code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == ProviderKeyError {
    public static let unreadableFile = Self("unreadableFile")
    public static let unreadableKey = Self("unreadableKey")
    public static let missingKeyID = Self("missingKeyID")
    public static let badKeyID = Self("badKeyID")
    public static let badTeamID = Self("badTeamID")
}
