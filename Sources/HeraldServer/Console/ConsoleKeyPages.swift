import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// The console's *API keys* page: the keys with their limits and use, made and revoked through ``APIKeys`` (an admin
/// without limits only).
struct ConsoleKeyPages: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]
    let apiKeys: APIKeys
    let clock: any WallClock

    func addRoutes(to router: RouterGroup<ServerRequestContext>) {
        router.get("/console/keys", use: keys)
        router.post("/console/keys", use: createKey)
        router.post("/console/keys/{id}/revoke", use: revokeKey)
    }

    @Sendable func keys(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try Self.access(context).requireUnscoped("managing keys")
        let revoked = try request.queryParameter("revoked") != nil
        return try await keysPage(
            KeysView.Outcome(notice: revoked ? "The key was revoked: it no longer works." : nil), context: context)
    }

    private func keysPage(
        _ outcome: KeysView.Outcome, context: ServerRequestContext, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let now = clock.now()
        let stored = try await store.apiKeys()
        let keys = stored.reversed().map { key in
            let apps = key.apps.isEmpty ? "every app" : key.apps.sorted().joined(separator: ", ")
            return KeysView.Key(
                id: key.id.lowercasedText, name: key.name, prefix: key.prefix.isEmpty ? "—" : key.prefix,
                scopes: key.scopes.sorted().map(\.rawValue).joined(separator: ", "),
                limits: apps + (key.environment.map { " (\($0.name))" } ?? ""),
                createdAt: Self.display(key.createdAt), active: key.isUsable(at: now),
                expired: key.isActive && key.isExpired(at: now), revoked: !key.isActive,
                lastUsedAt: key.lastUsedAt == nil ? "never" : Self.display(key.lastUsedAt),
                revokedAt: Self.display(key.revokedAt), expiresAt: key.expiresAt.map(Self.display))
        }
        var unscopedWarning: String?
        let unscoped = stored.filter { $0.isUsable(at: now) && !$0.isScoped && !$0.allows(.admin) }
        if appIDs.count > 1, !unscoped.isEmpty {
            unscopedWarning =
                "This server has \(appIDs.count) apps, and \(unscoped.count) active key\(unscoped.count == 1 ? "" : "s") without apps (\(unscoped.map(\.name).sorted().joined(separator: ", "))) may send to all of them: make one key per app and revoke these."
        }
        let view = KeysView(
            notice: outcome.notice, error: outcome.error, created: outcome.created, apps: appIDs,
            unscopedWarning: unscopedWarning, keys: keys, hasKeys: !keys.isEmpty)
        return renderer.page("keys", title: "API keys", section: .keys, view: view, context: context, status: status)
    }

    /// keys.mustache's values.
    struct KeysView: ConsoleView {
        /// What the page says about the change that led to it.
        struct Outcome {
            var notice: String?
            var error: String?
            /// A new key, whose secret is shown once.
            var created: Created?
        }

        struct Created {
            let name: String
            let secret: String
        }

        struct Key {
            let id: String
            let name: String
            let prefix: String
            let scopes: String
            /// The apps and environment the key is limited to, in words.
            let limits: String
            let createdAt: String
            let active: Bool
            let expired: Bool
            let revoked: Bool
            let lastUsedAt: String
            let revokedAt: String
            let expiresAt: String?
        }

        let notice: String?
        let error: String?
        let created: Created?
        let apps: [String]
        let unscopedWarning: String?
        let keys: [Key]
        let hasKeys: Bool
    }

    @Sendable func createKey(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        try Self.access(context).requireUnscoped("making a key")
        let form = try await ConsoleForm.read(request, session: session)
        let creation = APIKeys.Creation(
            name: (form["name"] ?? "").trimmingCharacters(in: .whitespaces),
            scopes: Set(form.all("scope").map { APIKeyScope(rawValue: $0) }), apps: form.all("app"),
            environment: form["environment"].flatMap { $0.isEmpty ? nil : $0 },
            expires: form["expires"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 })
        do {
            let created = try await apiKeys.create(creation, by: context.caller)
            return try await keysPage(
                KeysView.Outcome(created: KeysView.Created(name: created.key.name, secret: created.secret.value)),
                context: context, status: .created)
        } catch let error as APIError where error.status == .badRequest {
            return try await keysPage(KeysView.Outcome(error: error.message), context: context, status: .badRequest)
        }
    }

    @Sendable func revokeKey(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        try Self.access(context).requireUnscoped("revoking a key")
        _ = try await ConsoleForm.read(request, session: session)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError(.notFound, reason: "unknownAPIKey", "There is no such API key: pick one from the list.")
        }
        try await apiKeys.revoke(id, by: context.caller)
        return Self.redirect("/console/keys?revoked=1")
    }
}
