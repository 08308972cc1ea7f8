public import Foundation

/// A signed provider token (JWT) for token-based APNs authentication.
///
/// `description` shows only the key id and age, never the token: a JWT is a credential for up to an hour.
public struct ProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWS: `header.claims.signature`.
    public let jwt: String
    /// The `kid` it was signed with.
    public let keyID: String
    /// The `iss`: the team.
    public let teamID: String
    /// The `iat`, whole seconds.
    public let issuedAt: Date

    public init(jwt: String, keyID: String, teamID: String, issuedAt: Date) {
        self.jwt = jwt
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
        self.authorizationHeader = "bearer " + jwt
    }

    /// The `authorization` header value: `bearer <jwt>`.
    public let authorizationHeader: String

    /// How old the token is at `now`.
    public func age(at now: Date) -> TimeInterval { now.timeIntervalSince(issuedAt) }

    public var description: String { "ProviderToken(keyID: \(keyID), teamID: \(teamID), issuedAt: \(Int(issuedAt.timeIntervalSince1970)))" }
}
