import Foundation
import HTTPTypes
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// Checks `Authorization: Bearer <secret>` against the stored API keys (salted HMAC-SHA256; verified keys are
/// remembered for a few seconds, ``APIKeyVerifier``) and the scope a route needs.
///
/// Without `Authorization`, the console's session cookie authenticates the call as the session's role may
/// (``ConsoleAuthority/apiKey(of:)``), so the console's scripts use the same API as everyone else (the dry run,
/// sends, their progress); a call that changes something must then carry the session's CSRF token in
/// `X-Herald-CSRF`, else it is `403 csrfTokenMissing`. Only the routes behind this check look at the cookie.
/// No header is `401 missingAPIKey`; an unknown or revoked key `401 invalidAPIKey`; a key without the scope
/// `403 insufficientScope`; an expired key `401 expiredAPIKey`. A key scoped to apps passes here: each route checks
/// the apps it acts on (``KeyAccess``). The secret is never logged; the key's name and display prefix are.
struct APIKeyAuthenticator: RouterMiddleware {
    typealias Context = ServerRequestContext

    let keys: APIKeyVerifier
    let scope: APIKeyScope
    /// Whether a key with the `read` scope may make this group's `GET`s (the viewer role): true for sends,
    /// activities, channels and devices; false for keys and the audit log.
    var readableWithReadScope = true

    /// Whether a key may make this request: it has the scope, or it only reads and has `read`.
    private func permits(_ key: APIKey, _ request: Request) -> Bool {
        key.allows(scope)
            || (readableWithReadScope && key.allows(.read) && [.get, .head].contains(request.method))
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if request.headers[.authorization] == nil, let sessions = keys.consoleSessions,
            let session = try await sessions.session(for: request)
        {
            let key = try Self.consoleKey(of: session, request)
            guard !key.isExpired(at: keys.now()) else {
                await keys.recordExpiry(of: key, context)
                throw Self.expired(key)
            }
            guard permits(key, request) else { throw Self.insufficientScope(key, scope) }
            var context = context
            context.consoleSession = session
            context.apiKey = key
            context.logger[metadataKey: LogKey.apiKey] = "console session (\(key.name))"
            return try await next(request, context)
        }
        guard let header = request.headers[.authorization], !header.isEmpty else {
            throw APIError(
                .unauthorized, reason: "missingAPIKey",
                "This endpoint needs an API key with the \(scope) scope: send Authorization: Bearer <key> (create one with herald keys create).",
                headers: [.wwwAuthenticate: "Bearer"])
        }
        guard let secret = Self.bearerSecret(header), let key = try await keys.key(forSecret: secret) else {
            throw APIError(
                .unauthorized, reason: "invalidAPIKey",
                "The API key is unknown or revoked: send Authorization: Bearer <key> with an active key (herald keys list).",
                headers: [.wwwAuthenticate: "Bearer"])
        }
        guard !key.isExpired(at: keys.now()) else {
            await keys.recordExpiry(of: key, context)
            throw Self.expired(key)
        }
        guard permits(key, request) else { throw Self.insufficientScope(key, scope) }
        var context = context
        context.apiKey = key
        context.logger[metadataKey: LogKey.apiKey] = "\(key.name) \(key.prefix)…"
        return try await next(request, context)
    }

    /// The key a console session's call acts as.
    /// - Throws: ``APIError`` `403 csrfTokenMissing` for a call that changes something without the session's CSRF
    ///   token.
    private static func consoleKey(of session: ConsoleSession, _ request: Request) throws(APIError) -> APIKey {
        if ![.get, .head, .options].contains(request.method),
            !ConsoleAuthority.matches(request.headers[ConsoleAuthority.csrfHeader], session.csrfToken)
        {
            throw APIError(
                .forbidden, reason: "csrfTokenMissing",
                "A call made with the console's session cookie must carry the session's CSRF token in X-Herald-CSRF: reload the console page, or use an API key."
            )
        }
        return ConsoleAuthority.apiKey(of: session)
    }

    /// The secret of `Bearer <secret>` (the scheme in any case), without the spaces and tabs around it; `nil` for
    /// another scheme or an empty secret.
    static func bearerSecret(_ header: String) -> String? {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        var rest = Substring(header).drop(while: blank)
        let scheme = rest.prefix(while: { !blank($0) })
        guard scheme.count == 6, scheme.lowercased() == "bearer" else { return nil }
        rest = rest.dropFirst(6).drop(while: blank)
        while let last = rest.last, blank(last) { rest.removeLast() }
        return rest.isEmpty ? nil : String(rest)
    }

    static func expired(_ key: APIKey) -> APIError {
        APIError(
            .unauthorized, reason: "expiredAPIKey",
            "The API key \(key.name) has expired: create a new one (herald keys create NAME --expires 90d) and revoke this one.",
            headers: [.wwwAuthenticate: "Bearer"])
    }

    static func insufficientScope(_ key: APIKey, _ scope: APIKeyScope) -> APIError {
        APIError(
            .forbidden, reason: "insufficientScope",
            "The API key \(key.name) lacks the \(scope) scope: create a key with it (herald keys create --scope \(scope))."
        )
    }
}
