import Foundation
import HeraldCore

/// What one connection has proven about itself: the rules APNs applies per connection (§3.1 step 4–6, §3.2).
struct ConnectionAuthentication {
    enum Method {
        /// Token authentication: bound to a team and key by the first valid token.
        case token
        /// A client certificate: the topics it may push to, and the default topic.
        case certificate(topics: Set<String>, defaultTopic: String)
    }

    var method: Method = .token
    /// The team, key and key restriction bound by the first valid token.
    var boundKey: ProviderTokenVerifier.TrustedKey?
    /// The token in use, and when the connection last switched tokens.
    var currentJWT: String?
    /// The current token's verification: a connection sends the same token for up to an hour, so its signature is
    /// checked once and only its age on every request.
    var verifiedToken: ProviderTokenVerifier.Verified?
    var lastTokenChange: Date?
    /// Whether a request with a valid credential has been processed (raises `MAX_CONCURRENT_STREAMS`).
    var hasValidatedRequest = false
}
