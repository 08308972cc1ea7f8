/// A new API key and its secret: the only time the secret is available.
public struct CreatedAPIKey: Sendable {
    /// The key as stored.
    public var key: APIKey
    /// The secret to give to the key's user. The store keeps only its hash, so it cannot be shown again.
    public var secret: APIKeySecret
}
