import Crypto
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
    /// - Parameter hosts: The push services the endpoint may name; `nil` skips that check (a subscription read back
    ///   from the store, which the sender checks against the list it has then).
    /// - Throws: ``WebPushError`` `invalidEndpoint` (not an https URL a push service would give), `endpointNotAllowed`
    ///   (a host outside `hosts`), or `invalidSubscriptionKey`.
    public init(endpoint text: String, p256dh: String, auth: String, hosts: PushServiceHosts? = .default)
        throws(WebPushError)
    {
        endpoint = try Self.checkedEndpoint(text, hosts: hosts)
        keys = try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth)
    }

    /// A subscription of checked parts.
    public init(endpoint: URL, keys: WebPushSubscriptionKeys) {
        self.endpoint = endpoint
        self.keys = keys
    }

    /// An endpoint as a push service gives it, on one of `hosts`.
    /// - Throws: ``WebPushError`` `invalidEndpoint` or `endpointNotAllowed`.
    public static func checkedEndpoint(_ text: String, hosts: PushServiceHosts?) throws(WebPushError) -> URL {
        guard text.utf8.count <= maximumEndpointBytes else {
            throw WebPushError(
                .invalidEndpoint,
                "The endpoint has \(text.utf8.count) bytes: a push service's has at most \(maximumEndpointBytes).")
        }
        guard let url = URL(string: text), url.scheme == "https", let host = url.host, !host.isEmpty, url.user == nil,
            url.password == nil, url.fragment == nil,
            !text.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false })
        else {
            throw WebPushError(
                .invalidEndpoint,
                "The endpoint is not an https URL as a push service gives one (no user, password or fragment): send PushSubscription.toJSON().endpoint as it is."
            )
        }
        if let hosts, !hosts.allows(host, port: url.port) {
            let named = url.port.map { "\(host):\($0)" } ?? host
            throw WebPushError(
                .endpointNotAllowed,
                "The endpoint's host \(named) is not a known push service (\(hosts.patterns.joined(separator: ", "))): the server posts only to those. A push service of your own must be added to the server's list of push-service hosts (HERALD_WEB_PUSH_HOSTS)."
            )
        }
        return url
    }

    /// The endpoint's origin: the `aud` of its VAPID JWT.
    public var audience: String { VAPID.audience(of: endpoint) ?? "" }

    /// The subscription's address in the registry, where a device has its APNs token: the SHA-256 of the endpoint,
    /// as 64 hex digits. The same endpoint registered again is the same device; receipts, preferences and the trace
    /// name it by this token.
    public var token: DeviceToken { Self.token(ofEndpoint: endpoint.absoluteString) }

    /// The registry token of an endpoint (``token``).
    public static func token(ofEndpoint endpoint: String) -> DeviceToken {
        // 32 bytes are within a token's bounds: the init cannot throw here.
        try! DeviceToken(data: Array(SHA256.hash(data: Data(endpoint.utf8))))
    }
}

/// The push services' hosts a subscription's endpoint may name: exact hosts, `*.domain` for any host under a domain
/// (not the domain itself), and `host:port` for a push service on a port other than 443 (a test's emulator).
public struct PushServiceHosts: Sendable, Hashable, CustomStringConvertible {
    public let patterns: [String]

    public init(_ patterns: [String]) { self.patterns = patterns.map { $0.lowercased() } }

    /// Apple's (Safari), Google's (Chrome, Edge on Android), Mozilla's (Firefox) and Microsoft's (Edge on Windows).
    public static let `default` = PushServiceHosts([
        "web.push.apple.com", "fcm.googleapis.com", "updates.push.services.mozilla.com", "*.notify.windows.com",
    ])

    /// Parses a comma-separated list (`HERALD_WEB_PUSH_HOSTS`).
    /// - Returns: `nil` when an entry is not a host, `*.domain`, or `host:port`.
    public init?(list text: String) {
        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !entries.isEmpty else { return nil }
        for entry in entries {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let name = parts.first, !name.isEmpty,
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "*") }),
                !name.dropFirst(name.hasPrefix("*.") ? 2 : 0).contains("*"),
                parts.count == 1 || Int(parts[1]).map({ (1...65535).contains($0) }) == true
            else { return nil }
        }
        self.init(entries)
    }

    /// Whether an endpoint's host (and port, when it names one other than 443) is on the list.
    public func allows(_ host: String, port: Int? = nil) -> Bool {
        let host = host.lowercased()
        let port = port == 443 ? nil : port
        return patterns.contains { entry in
            var pattern = Substring(entry)
            var patternPort: Int?
            if let colon = entry.lastIndex(of: ":") {
                pattern = entry[..<colon]
                patternPort = Int(entry[entry.index(after: colon)...])
            }
            guard (patternPort == 443 ? nil : patternPort) == port else { return false }
            if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) && host.count > pattern.count - 1 }
            return host == pattern
        }
    }

    public var description: String { patterns.joined(separator: ",") }
}
