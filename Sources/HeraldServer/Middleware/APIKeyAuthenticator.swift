import Foundation
import HTTPTypes
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// Checks `Authorization: Bearer <secret>` against the stored API keys (salted HMAC-SHA256; verified keys are
/// remembered for a few seconds, ``APIKeyVerifier``) and the scope a route needs.
///
/// A request a console session already authenticated (its cookie, no `Authorization`) only has its scope checked.
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
        // A console session's cookie authenticated the request already (ConsoleSessionMiddleware).
        if let key = context.apiKey, request.headers[.authorization] == nil {
            guard !key.isExpired(at: keys.now()) else {
                await keys.recordExpiry(of: key, context)
                throw Self.expired(key)
            }
            guard permits(key, request) else { throw Self.insufficientScope(key, scope) }
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
