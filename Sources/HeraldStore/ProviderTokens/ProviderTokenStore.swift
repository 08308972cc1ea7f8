public import HeraldCore

/// Provider tokens (JWTs) shared by the server instances of one deployment.
///
/// APNs answers `TooManyProviderTokenUpdates` when a key's token changes more than once per 20 minutes, so a fleet
/// signs one token per key and shares it: an instance first reads ``latestProviderToken(keyID:)``, signs a new one
/// only when that is too old, and saves it with ``saveProviderToken(_:)``, which keeps only the newest.
///
/// The stored JWT is a credential for up to an hour: protect the database accordingly. Methods throw
/// ``StoreError``.
public protocol ProviderTokenStore: Sendable {
    /// The newest token saved for a key id, or `nil`.
    func latestProviderToken(keyID: String) async throws -> ProviderToken?

    /// Saves a token unless a token for its key id issued at the same time or later is stored.
    /// - Returns: Whether it was saved. `false` means another instance saved a newer one: use that.
    func saveProviderToken(_ token: ProviderToken) async throws -> Bool
}
