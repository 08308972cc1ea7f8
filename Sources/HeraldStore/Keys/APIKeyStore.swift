public import Foundation

/// API keys for the send and admin APIs, stored hashed.
///
/// Backends implement the requirements, which deal in hashes; callers use ``createAPIKey(name:scopes:)`` and
/// ``apiKey(forSecret:)``, which generate and hash secrets. Methods throw ``StoreError``.
public protocol APIKeyStore: Sendable {
    /// Stores a key under the hash of its secret.
    /// - Throws: ``StoreError`` `.invalidRecord` when the name is empty or longer than 200 bytes.
    func insertAPIKey(_ key: APIKey, secretHash: String) async throws

    /// Every key, revoked ones included, oldest first. Never secrets.
    func apiKeys() async throws -> [APIKey]

    /// Revokes a key: it stops authenticating at once.
    /// - Returns: `false` when there is no such key or it was already revoked.
    func revokeAPIKey(_ id: UUID) async throws -> Bool

    /// The active key whose secret has this hash, or `nil`.
    func apiKey(secretHash: String) async throws -> APIKey?
}

extension APIKeyStore {
    /// Creates a key with a new random secret and returns the secret, which is never stored.
    /// - Parameters:
    ///   - name: A name for people.
    ///   - scopes: What the key may do.
    ///   - createdAt: The creation time to record.
    public func createAPIKey(name: String, scopes: Set<APIKeyScope>, at createdAt: Date = Date()) async throws
        -> CreatedAPIKey
    {
        guard !name.isEmpty, name.utf8.count <= 200 else {
            throw StoreError(.invalidRecord, "An API key needs a name of 1 to 200 bytes, such as \"backend\".")
        }
        let secret = APIKeySecret.generate()
        let key = APIKey(
            id: UUID(), name: name, scopes: scopes, prefix: secret.displayPrefix,
            createdAt: StoreTime.rounded(createdAt), revokedAt: nil)
        try await insertAPIKey(key, secretHash: secret.hash)
        return CreatedAPIKey(key: key, secret: secret)
    }

    /// The active key a presented secret belongs to, or `nil` for an unknown or revoked secret.
    public func apiKey(forSecret secret: String) async throws -> APIKey? {
        try await apiKey(secretHash: APIKeySecret(secret).hash)
    }
}
