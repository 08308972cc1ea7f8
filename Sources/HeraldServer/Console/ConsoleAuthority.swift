import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import Synchronization

/// Who is signed in to the console: sessions, their cookies and CSRF tokens, sign-in by admin API key, and the
/// one-time sign-in link a fresh server prints.
///
/// A session id is 32 random bytes in the `herald_session` cookie (`HttpOnly`, `SameSite=Strict`, `Secure` over
/// TLS); the store keeps only its SHA-256, with the session's CSRF token. Signing in always makes a new id and ends
/// the session the request carried (no fixation); signing out deletes it, so the old cookie is refused. A session
/// unused for ``ServerConfiguration/Console/idleTimeout`` ends.
final class ConsoleAuthority: Sendable {
    static let sessionCookie = "herald_session"
    /// The pre-session cookie of the sign-in form (double-submit CSRF token).
    static let signInCookie = "herald_sign_in"
    /// The header a script's API call carries the session's CSRF token in.
    static let csrfHeader = HTTPField.Name("X-Herald-CSRF")!
    /// The form field every state-changing form carries the CSRF token in.
    static let csrfField = "_csrf"
    /// How often a session's last activity is written: not on every request.
    private static let touchInterval: TimeInterval = 60

    let store: any Store
    let clock: any WallClock
    let settings: ServerConfiguration.Console
    let limiter: RateLimiter
    /// The one-time sign-in link's token made at start, until it is logged.
    let pendingLink = Mutex<String?>(nil)

    init(store: any Store, clock: any WallClock, settings: ServerConfiguration.Console) {
        self.store = store
        self.clock = clock
        self.settings = settings
        limiter = RateLimiter(perMinute: settings.signInAttemptsPerMinute, subject: "sign-in attempts")
    }

    // MARK: Sessions

    /// The session a request's cookie names, if it is valid and not idle for too long (an idle one is deleted).
    func session(for request: Request) async throws -> ConsoleSession? {
        guard let id = Self.cookie(Self.sessionCookie, in: request), !id.isEmpty else { return nil }
        let hash = Self.hash(id)
        guard let session = try await store.consoleSession(idHash: hash) else { return nil }
        let now = clock.now()
        // A session ends when its key expires, as the key stops working through the API.
        if now.timeIntervalSince(session.lastSeenAt) > settings.idleTimeout.seconds
            || session.apiKey?.isExpired(at: now) == true
        {
            _ = try await store.deleteConsoleSession(idHash: hash)
            return nil
        }
        if now.timeIntervalSince(session.lastSeenAt) > Self.touchInterval {
            try await store.touchConsoleSession(idHash: hash, at: now)
        }
        return session
    }

    /// Opens a session for a key (or a one-time link, `nil`), ending the one the request carried.
    /// - Returns: The `Set-Cookie` value of the new session.
    func open(for key: APIKey?, replacing request: Request) async throws -> String {
        if let old = Self.cookie(Self.sessionCookie, in: request), !old.isEmpty {
            _ = try await store.deleteConsoleSession(idHash: Self.hash(old))
        }
        let now = clock.now()
        _ = try await store.deleteConsoleSessions(lastSeenBefore: now.addingTimeInterval(-settings.idleTimeout.seconds))
        let id = Self.randomToken()
        try await store.createConsoleSession(
            ConsoleSession(
                idHash: Self.hash(id), csrfToken: Self.randomToken(), apiKey: key, createdAt: now, lastSeenAt: now))
        return Self.setCookie(Self.sessionCookie, id, secure: Self.isSecure(request))
    }

    /// Ends the request's session. - Returns: the `Set-Cookie` value that clears the cookie.
    func close(_ request: Request) async throws -> String {
        if let id = Self.cookie(Self.sessionCookie, in: request), !id.isEmpty {
            _ = try await store.deleteConsoleSession(idHash: Self.hash(id))
        }
        return Self.clearCookie(Self.sessionCookie, secure: Self.isSecure(request))
    }

    /// What an API call authenticated by a session may do: what its role may (``ConsoleRole``). An admin (the key
    /// signed in with has `admin`, or the one-time link) may what an `admin` + `send` key may; an operator what its
    /// `send` key may; a viewer only read.
    static func apiKey(of session: ConsoleSession) -> APIKey {
        var key =
            session.apiKey
            ?? APIKey(
                id: UUID(uuidString: "00000000-0000-0000-0000-000000000000")!, name: "console sign-in link", scopes: [], prefix: "",
                createdAt: session.createdAt, revokedAt: nil)
        switch ConsoleRole(session) {
        case .admin: key.scopes.formUnion([.admin, .send])
        case .operator: key.scopes = [.send]
        case .viewer: key.scopes = [.read]
        }
        return key
    }

    // MARK: Sign-in link

    /// Makes the one-time sign-in link when no active key has the `admin` scope, so a newcomer can sign in.
    func prepareSignInLink() async throws {
        guard try await !store.apiKeys().contains(where: { $0.isActive && $0.allows(.admin) }) else { return }
        let token = Self.randomToken()
        try await store.createSignInLink(
            tokenHash: Self.hash(token), expiresAt: clock.now().addingTimeInterval(settings.signInLinkLifetime.seconds))
        pendingLink.withLock { $0 = token }
    }

    /// The path of the link made at start (`/console/sign-in/<token>`), if one was made.
    var signInLinkPath: String? { pendingLink.withLock { $0 }.map { "/console/sign-in/\($0)" } }

    /// Uses a one-time link's token: `true` once, before it expires.
    func consumeSignInLink(_ token: String) async throws -> Bool {
        guard !token.isEmpty, token.utf8.count <= 128 else { return false }
        return try await store.consumeSignInLink(tokenHash: Self.hash(token), at: clock.now())
    }

    // MARK: Cookies and tokens

    /// 32 random bytes, base64url without padding.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Base64URL.encode(bytes)
    }

    /// SHA-256 as lowercase hex.
    static func hash(_ text: String) -> String {
        Hex.string(SHA256.hash(data: Array(text.utf8)))
    }

    /// Compares secrets in constant time.
    static func matches(_ presented: String?, _ expected: String) -> Bool {
        guard let presented else { return false }
        let a = Array(presented.utf8)
        let b = Array(expected.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// A cookie's value from the request's `Cookie` headers.
    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// Whether the request reached us over TLS: directly, or through a proxy that says so.
    static func isSecure(_ request: Request) -> Bool {
        request.uri.scheme?.rawValue == "https"
            || request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    static func setCookie(_ name: String, _ value: String, secure: Bool) -> String {
        "\(name)=\(value); Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    static func clearCookie(_ name: String, secure: Bool) -> String {
        "\(name)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}

extension Duration {
    /// The duration in seconds, as a time interval.
    fileprivate var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
