public import Foundation

/// A browser's push subscription (`PushSubscription.toJSON()`): the push service's endpoint to POST to, and the keys
/// messages are encrypted for. Made only for an endpoint on a known push service (``PushServiceHosts``): a
/// registration must never make the server post to an address of the registrant's choosing.
public struct WebPushSubscription: Sendable, Hashable {
    public let endpoint: URL
    public let keys: WebPushSubscriptionKeys

    /// The longest endpoint taken; real ones are under 600 bytes.
    public static let maximumEndpointBytes = 2_048

    /// Checks a subscription as the registration API receives it.
    /// - Throws: ``WebPushError`` `invalidEndpoint` (not an https URL a push service would give), `endpointNotAllowed`
    ///   (a host outside `hosts`), or `invalidSubscriptionKey`.
    public init(endpoint text: String, p256dh: String, auth: String, hosts: PushServiceHosts = .default)
        throws(WebPushError)
    {
        guard text.utf8.count <= Self.maximumEndpointBytes else {
            throw WebPushError(.invalidEndpoint, "The endpoint has \(text.utf8.count) bytes: a push service's has at most \(Self.maximumEndpointBytes).")
        }
        guard let url = URL(string: text), url.scheme == "https", let host = url.host, !host.isEmpty, url.user == nil,
            url.password == nil, url.fragment == nil, url.port == nil || url.port == 443,
            !text.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false })
        else {
            throw WebPushError(
                .invalidEndpoint,
                "The endpoint is not an https URL as a push service gives one (no user, port or fragment): send PushSubscription.toJSON().endpoint as it is.")
        }
        guard hosts.allows(host) else {
            throw WebPushError(
                .endpointNotAllowed,
                "The endpoint's host \(host) is not a known push service (\(hosts.patterns.joined(separator: ", "))): the server posts only to those. A push service of your own must be added to the server's list of push-service hosts.")
        }
        endpoint = url
        keys = try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth)
    }

    /// The endpoint's origin: the `aud` of its VAPID JWT.
    public var audience: String { VAPID.audience(of: endpoint) ?? "" }
}

/// The push services' hosts a subscription's endpoint may name: exact hosts, or `*.domain` for any host under a
/// domain (not the domain itself).
public struct PushServiceHosts: Sendable, Hashable {
    public let patterns: [String]

    public init(_ patterns: [String]) { self.patterns = patterns.map { $0.lowercased() } }

    /// Apple's (Safari), Google's (Chrome, Edge on Android), Mozilla's (Firefox) and Microsoft's (Edge on Windows).
    public static let `default` = PushServiceHosts([
        "web.push.apple.com", "fcm.googleapis.com", "updates.push.services.mozilla.com", "*.notify.windows.com",
    ])

    public func allows(_ host: String) -> Bool {
        let host = host.lowercased()
        return patterns.contains { pattern in
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1 }
            return host == pattern
        }
    }
}
