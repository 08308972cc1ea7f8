import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// API keys and the audit log through the admin API (API key with the `admin` scope; docs/security.md):
/// `GET /api/keys`, `POST /api/keys` (the secret is in the answer, once), `DELETE /api/keys/{id}`, and
/// `GET /api/audit` (newest first, paged, by app, key and kind).
///
/// Keys are managed by admin keys without limits only (`403 unscopedKeyRequired`): a key limited to some apps must
/// not make one that is not. A scoped admin key reads its apps' audit entries only.
struct AccessController: Sendable {
    let store: any Store
    let keys: APIKeyVerifier
    let apps: AppDirectory
    let apiKeys: APIKeys
    let clock: any WallClock

    func addRoutes(to router: Router<ServerRequestContext>) {
        let group = router.group().add(
            middleware: APIKeyAuthenticator(keys: keys, scope: .admin, readableWithReadScope: false))
        group.get("/api/keys", use: list)
        group.post("/api/keys", use: create)
        group.delete("/api/keys/{id}", use: revoke)
        group.get("/api/audit", use: auditLog)
    }

    private static let createFields: Set<String> = ["name", "scopes", "apps", "environment", "expires"]

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let listed = try await apiKeys.list(for: context.caller)
        let now = clock.now()
        return .json(.object(["keys": .array(listed.map { .object(Self.json($0, now: now)) })]))
    }

    @Sendable func create(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try context.access.requireUnscoped("making a key")
        let fields = try await RequestFields.read(request, limit: 16 * 1024, allowed: Self.createFields)
        let scopeNames = try fields.strings("scopes", maximumCount: 10)
        let creation = APIKeys.Creation(
            name: try fields.string("name") ?? "",
            scopes: Set((scopeNames.isEmpty ? ["send"] : scopeNames).map { APIKeyScope(rawValue: $0) }),
            apps: try fields.strings("apps", maximumCount: 100), environment: try fields.string("environment"),
            expires: try fields.string("expires"))
        let created = try await apiKeys.create(creation, by: context.caller)
        return .json(
            .object([
                "key": .object(Self.json(created.key, now: clock.now())), "secret": .string(created.secret.value),
            ]),
            status: .created, headers: [.location: "/api/keys/\(created.key.id.lowercasedText)"])
    }

    @Sendable func revoke(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try context.access.requireUnscoped("revoking a key")
        guard let id = context.parameters.get("id").flatMap({ UUID(text: $0) }) else {
            throw APIError.invalidField("id", "a key id is a UUID, as GET /api/keys lists it")
        }
        return .json(.object(Self.json(try await apiKeys.revoke(id, by: context.caller), now: clock.now())))
    }

    /// `?app=&key=&kind=&after=&limit=`: entries newest first. A scoped key reads only its apps' entries, and is
    /// refused another app by name (`403 appNotAllowed`).
    @Sendable func auditLog(_ request: Request, context: ServerRequestContext) async throws -> Response {
        var query = AuditQuery(apps: context.access.topics)
        if let app = try request.queryParameter("app") {
            try context.access.check(app: app)
            query.apps = [app]
        }
        if let text = try request.queryParameter("key") {
            guard let id = UUID(text: text) else { throw APIError.invalidField("key", "give a key id, as GET /api/keys lists it") }
            query.keyID = id
        }
        if let kind = try request.queryParameter("kind") { query.action = AuditAction(rawValue: kind) }
        let cursor: AuditCursor? = try SendController.cursor(request)
        let page = try await store.auditEntries(
            query, after: cursor, limit: try SendController.limit(request.queryParameter("limit")))
        var members: [String: JSONValue] = ["entries": .array(page.entries.map { .object(Self.json($0)) })]
        if let next = page.next { members["next"] = .string(next.description) }
        return .json(.object(members))
    }

    /// A key as the API shows it: never its secret or hash. `state` is `active`, `expired` or `revoked`.
    static func json(_ key: APIKey, now: Date) -> [String: JSONValue] {
        var members: [String: JSONValue] = [
            "id": .string(key.id.lowercasedText), "name": .string(key.name), "prefix": .string(key.prefix),
            "scopes": .array(key.scopes.sorted().map { .string($0.rawValue) }),
            "apps": .array(key.apps.sorted().map { .string($0) }),
            "createdAt": .string(RFC3339.string(key.createdAt)),
            "state": .string(key.revokedAt != nil ? "revoked" : key.isExpired(at: now) ? "expired" : "active"),
        ]
        if let environment = key.environment { members["environment"] = .string(environment.name) }
        if let expiresAt = key.expiresAt { members["expiresAt"] = .string(RFC3339.string(expiresAt)) }
        if let lastUsedAt = key.lastUsedAt { members["lastUsedAt"] = .string(RFC3339.string(lastUsedAt)) }
        if let revokedAt = key.revokedAt { members["revokedAt"] = .string(RFC3339.string(revokedAt)) }
        return members
    }

    /// An audit entry as the API shows it.
    static func json(_ entry: AuditEntry) -> [String: JSONValue] {
        var actor: [String: JSONValue] = ["kind": .string(entry.actor.kind.rawValue), "name": .string(entry.actor.name)]
        if let keyID = entry.actor.keyID { actor["keyId"] = .string(keyID.lowercasedText) }
        var members: [String: JSONValue] = [
            "id": .string(entry.id.lowercasedText), "at": .string(RFC3339.string(entry.at)), "actor": .object(actor),
            "kind": .string(entry.action.rawValue), "detail": .string(entry.detail),
        ]
        if let address = entry.address { members["address"] = .string(address) }
        if let app = entry.app { members["app"] = .string(app) }
        if let subject = entry.subject { members["subject"] = .string(subject) }
        return members
    }
}
