public import Foundation
public import HeraldCore

/// An API key as stored: its name, scopes and limits, never its secret.
public struct APIKey: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// The key's id, for listing and revoking.
    public var id: UUID
    /// A name for people: "ci", "backend".
    public var name: String
    /// What the key may do.
    public var scopes: Set<APIKeyScope>
    /// `hrld_<lookup id>`, to recognise a key in a list; no character of the secret. Empty for configured secrets
    /// without a lookup id and for keys from schema version 1.
    public var prefix: String
    /// When it was created.
    public var createdAt: Date
    /// When it was revoked; a revoked key no longer authenticates.
    public var revokedAt: Date?
    /// The apps (bundle ids) the key sees and acts on; empty: every app, as keys made before scoping.
    public var apps: Set<String>
    /// The one APNs environment the key acts in; `nil`: both.
    public var environment: APNSEnvironment?
    /// When the key stops authenticating; `nil`: never.
    public var expiresAt: Date?
    /// When the key last authenticated a request, to the minute; `nil`: never.
    public var lastUsedAt: Date?

    public init(
        id: UUID, name: String, scopes: Set<APIKeyScope>, prefix: String, createdAt: Date, revokedAt: Date?,
        apps: Set<String> = [], environment: APNSEnvironment? = nil, expiresAt: Date? = nil, lastUsedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.prefix = prefix
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.apps = apps
        self.environment = environment
        self.expiresAt = expiresAt
        self.lastUsedAt = lastUsedAt
    }

    /// Whether the key was not revoked (it may still have expired: ``isUsable(at:)``).
    public var isActive: Bool { revokedAt == nil }

    /// Whether the key authenticates at `now`: not revoked and not expired.
    public func isUsable(at now: Date) -> Bool { isActive && !isExpired(at: now) }

    /// Whether the key's expiry has passed at `now`.
    public func isExpired(at now: Date) -> Bool { expiresAt.map { $0 <= now } ?? false }

    /// Whether the key is limited to some apps.
    public var isScoped: Bool { !apps.isEmpty }

    /// Whether the key may see and act on an app.
    public func allows(app bundleID: String) -> Bool { apps.isEmpty || apps.contains(bundleID) }

    /// Whether the key may act in an environment.
    public func allows(environment: APNSEnvironment) -> Bool { self.environment.map { $0 == environment } ?? true }

    /// Whether the key carries a scope.
    public func allows(_ scope: APIKeyScope) -> Bool { scopes.contains(scope) }

    public var description: String {
        let limits = (apps.isEmpty ? "" : ", apps " + apps.sorted().joined(separator: ","))
            + (environment.map { ", \($0.name)" } ?? "")
        return "APIKey(\(name), \(prefix)…, \(scopes.sorted().map(\.rawValue).joined(separator: ","))\(limits))"
    }
}

extension APIKey {
    /// Scopes as stored: names sorted and separated by spaces.
    package var storedScopes: String { scopes.sorted().map(\.rawValue).joined(separator: " ") }

    /// Parses ``storedScopes``.
    package static func scopes(stored: String) -> Set<APIKeyScope> {
        Set(stored.split(separator: " ").map { APIKeyScope(rawValue: String($0)) })
    }

    /// Apps as stored: bundle ids sorted and separated by spaces; empty for every app.
    package var storedApps: String { apps.sorted().joined(separator: " ") }
}
