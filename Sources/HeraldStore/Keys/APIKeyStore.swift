public import Foundation
public import HeraldCore

/// API keys for the send and admin APIs, stored as salted keyed hashes (``APIKeyCredential``).
///
/// Backends implement the requirements, which deal in credentials; callers use ``createAPIKey(name:scopes:at:)`` and
/// ``apiKey(forSecret:)``, which generate, hash and check secrets. Methods throw ``StoreError``.
public protocol APIKeyStore: Sendable {
    /// Stores a key with its credential.
    /// - Throws: ``StoreError`` `.invalidRecord` when the name is empty or longer than 200 bytes.
    func insertAPIKey(_ key: APIKey, credential: APIKeyCredential) async throws

    /// Every key, revoked ones included, oldest first. Never secrets or hashes.
    func apiKeys() async throws -> [APIKey]

    /// Revokes a key: it stops authenticating at once.
    /// - Returns: `false` when there is no such key or it was already revoked.
    func revokeAPIKey(_ id: UUID) async throws -> Bool

    /// The keys with this lookup id, or, for `nil`, the keys without one (configured secrets of another form, and
    /// keys from schema version 1), with their credentials; revoked ones included, oldest first.
    func storedAPIKeys(lookupID: String?) async throws -> [StoredAPIKey]

    /// Replaces a key's credential: how a schema-1 key is re-hashed the first time it is used.
    func replaceAPIKeyCredential(_ id: UUID, with credential: APIKeyCredential) async throws

    /// Records that a key authenticated at `now`, unless it was recorded within the last `resolution` seconds (so a
    /// busy key does not write on every request).
    /// - Returns: whether it was written.
    @discardableResult
    func recordAPIKeyUse(_ id: UUID, at now: Date, resolution: TimeInterval) async throws -> Bool
}

extension APIKeyStore {
    /// Creates a key with a new random secret and returns the secret, which is never stored.
    /// - Parameters:
    ///   - name: A name for people.
    ///   - scopes: What the key may do.
    ///   - createdAt: The creation time to record.
    public func createAPIKey(
        name: String, scopes: Set<APIKeyScope>, apps: Set<String> = [], environment: APNSEnvironment? = nil,
        expiresAt: Date? = nil, at createdAt: Date = Date()
    ) async throws -> CreatedAPIKey {
        guard !name.isEmpty, name.utf8.count <= 200 else {
            throw StoreError(.invalidRecord, "An API key needs a name of 1 to 200 bytes, such as \"backend\".")
        }
        let secret = APIKeySecret.generate()
        let key = APIKey(
            id: UUID(), name: name, scopes: scopes, prefix: secret.displayPrefix,
            createdAt: StoreTime.rounded(createdAt), revokedAt: nil, apps: apps, environment: environment,
            expiresAt: expiresAt.map(StoreTime.rounded))
        try await insertAPIKey(key, credential: .make(for: secret))
        return CreatedAPIKey(key: key, secret: secret)
    }

    /// The active key a presented secret belongs to, or `nil` for an unknown or revoked secret. An expired key is
    /// returned: the caller, which knows the time, refuses it (``APIKey/isUsable(at:)``).
    ///
    /// A key stored by schema version 1 (unsalted SHA-256) still authenticates, and is re-hashed with a salt on this
    /// first use, so its old hash leaves the database.
    public func apiKey(forSecret text: String) async throws -> APIKey? {
        let secret = APIKeySecret(text)
        guard let match = try await storedAPIKey(forSecret: secret), match.key.isActive else { return nil }
        if match.credential.scheme == .legacySHA256 {
            try await replaceAPIKeyCredential(match.key.id, with: .make(for: secret))
        }
        return match.key
    }

    /// The key, active or revoked, whose credential a secret matches.
    public func storedAPIKey(forSecret secret: APIKeySecret) async throws -> StoredAPIKey? {
        let candidates = try await storedAPIKeys(lookupID: secret.lookupID)
        if let match = candidates.first(where: { $0.credential.verifies(secret) }) { return match }
        // A schema-1 secret may look like one with a lookup id.
        guard secret.lookupID != nil else { return nil }
        return try await storedAPIKeys(lookupID: nil).first { $0.credential.verifies(secret) }
    }
}
