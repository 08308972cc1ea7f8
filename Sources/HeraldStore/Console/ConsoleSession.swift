public import Foundation

/// A signed-in console session, as stored: the hash of its cookie's secret id, never the id itself.
public struct ConsoleSession: Sendable, Hashable {
    /// The SHA-256 of the session id the cookie carries (lowercase hex).
    public var idHash: String
    /// The token every state-changing form and API call of the session must carry.
    public var csrfToken: String
    /// The `admin` API key the session signed in with, or `nil` for a session opened by a one-time sign-in link.
    public var apiKey: APIKey?
    /// When the session was opened.
    public var createdAt: Date
    /// When it was last used; it expires after the server's idle timeout.
    public var lastSeenAt: Date

    public init(idHash: String, csrfToken: String, apiKey: APIKey?, createdAt: Date, lastSeenAt: Date) {
        self.idHash = idHash
        self.csrfToken = csrfToken
        self.apiKey = apiKey
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
    }
}
