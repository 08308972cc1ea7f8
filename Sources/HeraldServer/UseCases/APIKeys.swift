import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// API keys as the API (`/api/keys…`) and the console's *API keys* page manage them: made, listed and revoked only by
/// a caller without limits (a scoped key must not make a key that is not), each change audited — one set of rules for
/// both doors (docs/security.md).
struct APIKeys: Sendable {
    let store: any Store
    let apps: AppDirectory
    /// Forgets a revoked key at once, rather than when its cached verdict expires.
    let verifier: APIKeyVerifier
    let clock: any WallClock
    let audit: AuditTrail

    /// A key to make.
    struct Creation: Sendable, Hashable {
        /// For people, such as `alpha-backend`: 1 to 200 bytes, no control characters.
        var name: String
        var scopes: Set<APIKeyScope>
        /// The apps it is limited to (bundle ids this server serves); empty: every app.
        var apps: [String] = []
        /// `production` or `development`; `nil`: both.
        var environment: String?
        /// `90d`, `12h`, `30m` from now, or an RFC 3339 instant; `nil`: never.
        var expires: String?
    }

    /// The keys, oldest first.
    /// - Throws: ``APIError`` `403 unscopedKeyRequired`.
    func list(for caller: Caller) async throws -> [APIKey] {
        try caller.access.requireUnscoped("listing keys")
        return try await store.apiKeys()
    }

    /// Makes a key and answers its secret (shown once).
    /// - Throws: ``APIError`` `403 unscopedKeyRequired`; `400 invalidField` naming `name`, `scopes`, `apps`,
    ///   `environment` or `expires`.
    func create(_ creation: Creation, by caller: Caller) async throws -> CreatedAPIKey {
        try caller.access.requireUnscoped("making a key")
        guard (1...200).contains(creation.name.utf8.count), !TextRules.hasControlCharacter(creation.name) else {
            throw APIError.invalidField("name", "give a name of 1 to 200 bytes for people, such as \"alpha-backend\"")
        }
        guard !creation.scopes.isEmpty else { throw APIError.invalidField("scopes", "give the key at least one scope") }
        if let unknown = creation.scopes.first(where: { !APIKeyScope.known.contains($0) }) {
            throw APIError.invalidField("scopes", "\(unknown) is no scope: use send, admin, register or read")
        }
        let now = clock.now()
        let limits: APIKeyLimits
        do {
            limits = try APIKeyLimits(
                apps: creation.apps, environment: creation.environment, expires: creation.expires, now: now)
        } catch {
            throw APIError.invalidField(error.field == "app" ? "apps" : error.field, error.message)
        }
        // A key limited to an app this server does not serve would act on nothing, and dropping the app instead
        // would make it a key for every app.
        for app in limits.apps.sorted() { _ = try apps.app(named: app, field: "apps") }
        let created = try await store.createAPIKey(
            name: creation.name, scopes: creation.scopes, apps: limits.apps, environment: limits.environment,
            expiresAt: limits.expiresAt, at: now)
        await audit.record(
            .keyCreated, by: caller, app: created.key.apps.count == 1 ? created.key.apps.first : nil,
            subject: created.key.id.lowercasedText, detail: APIKeyLimits.describe(created.key))
        caller.logger.notice(
            "Created an API key", metadata: [LogKey.apiKey: "\(created.key.name) \(created.key.prefix)…"])
        return created
    }

    /// Revokes a key: it stops authenticating at once. Revoking a revoked key changes nothing.
    /// - Throws: ``APIError`` `403 unscopedKeyRequired`, `404 unknownAPIKey`.
    @discardableResult
    func revoke(_ id: UUID, by caller: Caller) async throws -> APIKey {
        try caller.access.requireUnscoped("revoking a key")
        guard let key = try await store.apiKeys().first(where: { $0.id == id }) else {
            throw APIError(
                .notFound, reason: "unknownAPIKey",
                "There is no API key \(id.lowercasedText): list them with GET /api/keys or the console's API keys page.")
        }
        if try await store.revokeAPIKey(id) {
            verifier.forget(id)
            await audit.record(.keyRevoked, by: caller, subject: id.lowercasedText, detail: "\(key.name) (\(key.prefix)…)")
            caller.logger.notice("Revoked an API key", metadata: [LogKey.apiKey: "\(key.name) \(key.prefix)…"])
        }
        return try await store.apiKeys().first { $0.id == id } ?? key
    }
}
