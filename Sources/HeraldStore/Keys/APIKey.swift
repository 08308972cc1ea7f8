public import Foundation

/// An API key as stored: its name and scopes, never its secret.
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

    public init(
        id: UUID, name: String, scopes: Set<APIKeyScope>, prefix: String, createdAt: Date, revokedAt: Date?
    ) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.prefix = prefix
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// Whether the key authenticates.
    public var isActive: Bool { revokedAt == nil }

    /// Whether the key carries a scope.
    public func allows(_ scope: APIKeyScope) -> Bool { scopes.contains(scope) }

    public var description: String {
        "APIKey(\(name), \(prefix)…, \(scopes.sorted().map(\.rawValue).joined(separator: ",")))"
    }
}

extension APIKey {
    /// Scopes as stored: names sorted and separated by spaces.
    package var storedScopes: String { scopes.sorted().map(\.rawValue).joined(separator: " ") }

    /// Parses ``storedScopes``.
    package static func scopes(stored: String) -> Set<APIKeyScope> {
        Set(stored.split(separator: " ").map { APIKeyScope(rawValue: String($0)) })
    }
}
