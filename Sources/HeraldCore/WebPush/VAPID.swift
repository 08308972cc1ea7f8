public import Crypto
public import Foundation

/// An application server's VAPID key (RFC 8292): the P-256 key a web app's subscriptions are made with
/// (`applicationServerKey`) and its push requests are signed with. Never described with its private half.
public struct VAPIDKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let privateKey: P256.Signing.PrivateKey
    /// The public key as subscriptions take it (`applicationServerKey`) and VAPID's `k=`: 65 bytes, base64url. Kept:
    /// the sender names its cached JWT by it at every message.
    public let publicKeyText: String

    /// A new key pair (`herald vapid generate`).
    public static func generate() -> VAPIDKey { VAPIDKey(privateKey: P256.Signing.PrivateKey()) }

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        publicKeyText = Base64URL.encode(privateKey.publicKey.x963Representation)
    }

    /// Reads a private key in PEM (`-----BEGIN PRIVATE KEY-----` or `EC PRIVATE KEY`), or as the 32 raw bytes in
    /// base64url that web-push tools print.
    /// - Throws: ``WebPushError`` `invalidVAPIDKey`.
    public init(text: String) throws(WebPushError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("-----BEGIN"), let key = try? P256.Signing.PrivateKey(pemRepresentation: trimmed) {
            self.init(privateKey: key)
        } else if let raw = Base64URL.decode(trimmed), raw.count == 32,
            let key = try? P256.Signing.PrivateKey(rawRepresentation: raw)
        {
            self.init(privateKey: key)
        } else {
            throw WebPushError(
                .invalidVAPIDKey,
                "The VAPID private key is neither a P-256 key in PEM nor 32 bytes of base64url: make one with `herald vapid generate`.")
        }
    }

    /// The private key as 32 raw bytes in base64url, to store as a secret.
    public var privateKeyText: String { Base64URL.encode(privateKey.rawRepresentation) }
    /// The private key in PEM (PKCS #8), for a key file (`HERALD_VAPID_KEY_FILE`).
    public var privateKeyPEM: String { privateKey.pemRepresentation }

    /// The `Authorization` header of a push request to an endpoint: `vapid t=<ES256 JWT>, k=<public key>`.
    /// - Parameters:
    ///   - audience: the endpoint's origin, `https://host[:port]`.
    ///   - subject: a `mailto:` or `https:` URL a push service can reach the sender at.
    ///   - expiresAt: at most 24 hours ahead (push services refuse longer).
    /// - Throws: ``WebPushError`` `badSubject`, `badAudience`.
    public func authorization(audience: String, subject: String, expiresAt: Date) throws(WebPushError) -> String {
        try VAPID.check(subject: subject)
        try VAPID.check(audience: audience)
        var header = JSONWriter(capacity: 32)
        header.beginObject()
        header.key("typ"); header.string("JWT")
        header.key("alg"); header.string("ES256")
        header.endObject()
        var claims = JSONWriter(capacity: 96)
        claims.beginObject()
        claims.key("aud"); claims.string(audience)
        claims.key("exp"); claims.integer(Int(expiresAt.timeIntervalSince1970.rounded(.down)))
        claims.key("sub"); claims.string(subject)
        claims.endObject()
        let input = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        // ECDSA signing with a valid in-memory key cannot fail.
        let signature = try! privateKey.signature(for: Data(input.utf8))
        return "vapid t=\(input).\(Base64URL.encode(signature.rawRepresentation)), k=\(publicKeyText)"
    }

    public var description: String { "VAPIDKey(public: \(publicKeyText.prefix(12))…)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["public": publicKeyText]) }
}

/// What a push service checks of a VAPID header (RFC 8292 §2–3), as Apple's does: the emulator's side.
public enum VAPID {
    /// The longest a VAPID JWT may live.
    public static let maximumLifetime: TimeInterval = 24 * 3600

    /// The claims of a header that passed ``verify(authorization:audience:now:)``.
    public struct Claims: Sendable, Hashable {
        public var audience: String
        public var subject: String
        public var expiresAt: Date
        /// The sender's public key (`k=`), base64url.
        public var publicKey: String
    }

    /// Checks a request's `Authorization` header: its form, the signature against `k`, `aud` equal to the endpoint's
    /// origin, `exp` in the future and at most 24 hours ahead, `sub` a `mailto:` or `https:` URL.
    /// - Throws: ``WebPushError`` `badJWT`, `badAudience` or `badSubject`, saying what is wrong.
    public static func verify(authorization: String, audience: String, now: Date) throws(WebPushError) -> Claims {
        func bad(_ why: String) -> WebPushError { WebPushError(.badJWT, why) }
        guard authorization.lowercased().hasPrefix("vapid ") else {
            throw bad("The Authorization header is not `vapid t=<JWT>, k=<public key>`.")
        }
        var parameters: [String: String] = [:]
        for part in authorization.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { parameters[String(pair[0]).lowercased()] = String(pair[1]) }
        }
        guard let jwt = parameters["t"], let key = parameters["k"] else {
            throw bad("The vapid header lacks t= (the JWT) or k= (the public key).")
        }
        let pieces = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let headerBytes = Base64URL.decode(pieces[0]),
            let claimBytes = Base64URL.decode(pieces[1]), let signatureBytes = Base64URL.decode(pieces[2]),
            let header = try? JSONValue(parsing: headerBytes), let claims = try? JSONValue(parsing: claimBytes)
        else { throw bad("The JWT is not three base64url parts of JSON.") }
        guard header["alg"]?.stringValue == "ES256" else { throw bad("The JWT's alg is not ES256.") }
        guard let keyBytes = Base64URL.decode(key),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: keyBytes),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: Data((pieces[0] + "." + pieces[1]).utf8))
        else { throw bad("The JWT's signature does not verify with k=.") }
        guard let aud = claims["aud"]?.stringValue, aud == audience else {
            throw WebPushError(
                .badAudience, "The JWT's aud is \(claims["aud"]?.stringValue ?? "missing"); it must be the endpoint's origin, \(audience).")
        }
        guard let exp = claims["exp"]?.intValue else { throw bad("The JWT has no exp.") }
        let expiresAt = Date(timeIntervalSince1970: Double(exp))
        guard expiresAt > now else { throw bad("The JWT expired at \(RFC3339.string(expiresAt)).") }
        guard expiresAt.timeIntervalSince(now) <= maximumLifetime else {
            throw bad("The JWT's exp is more than 24 hours ahead (\(RFC3339.string(expiresAt))).")
        }
        guard let sub = claims["sub"]?.stringValue else {
            throw WebPushError(.badSubject, "The JWT has no sub: give a mailto: or https: URL.")
        }
        try check(subject: sub)
        return Claims(audience: aud, subject: sub, expiresAt: expiresAt, publicKey: key)
    }

    /// A `sub` Apple takes: `mailto:` with an address, or an `https:` URL; no spaces or angle brackets.
    public static func check(subject: String) throws(WebPushError) {
        let lower = subject.lowercased()
        let address = lower.hasPrefix("mailto:") ? String(subject.dropFirst(7)) : nil
        let valid =
            !subject.contains(where: { $0.isWhitespace || $0 == "<" || $0 == ">" })
            && ((address.map { $0.contains("@") && !$0.hasPrefix("@") && !$0.hasSuffix("@") } ?? false)
                || (lower.hasPrefix("https://") && URL(string: subject)?.host?.isEmpty == false))
        guard valid else {
            throw WebPushError(
                .badSubject,
                "The VAPID subject is \"\(subject)\": it must be a mailto: or https: URL, such as mailto:push@example.com (Apple answers 403 BadJwtToken otherwise).")
        }
    }

    /// An `aud`: an origin, `https://host` with an optional port and nothing after it.
    static func check(audience: String) throws(WebPushError) {
        guard let url = URL(string: audience), url.scheme == "https", url.host?.isEmpty == false,
            url.path.isEmpty, url.query == nil, url.fragment == nil
        else {
            throw WebPushError(.badAudience, "The VAPID audience is \"\(audience)\": it is the endpoint's origin, such as https://web.push.apple.com.")
        }
    }

    /// The origin of an endpoint: what its VAPID `aud` must be.
    public static func audience(of endpoint: URL) -> String? {
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host?.lowercased() else { return nil }
        let port = endpoint.port == 443 && scheme == "https" ? nil : endpoint.port
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}
