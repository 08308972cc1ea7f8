/// Which APNs a device token belongs to: development (sandbox) or production.
///
/// A token is minted for one environment by the app's `aps-environment` entitlement. Sending it to the other
/// environment's host is answered with `BadDeviceToken`, the classic "worked from Xcode, not from TestFlight" bug,
/// so Herald records the environment with every token and routes each to its own host.
public struct APNSEnvironment: Sendable, Hashable, CustomStringConvertible {
    private enum Base: Sendable, Hashable {
        case development
        case production
    }

    private let base: Base

    /// The sandbox: builds run from Xcode with a development profile, and the Simulator.
    public static let development = APNSEnvironment(base: .development)
    /// TestFlight, Ad Hoc and App Store builds.
    public static let production = APNSEnvironment(base: .production)

    /// Both environments, development first.
    public static let all: [APNSEnvironment] = [.development, .production]

    /// Parses the names people and configuration files use: `development`, `sandbox`, `debug` for the sandbox;
    /// `production`, `prod`, `release` for production. Case-insensitive.
    public init?(name: some StringProtocol) {
        switch name.lowercased() {
        case "development", "sandbox", "debug", "dev": self = .development
        case "production", "prod", "release": self = .production
        default: return nil
        }
    }

    private init(base: Base) { self.base = base }

    /// `development` or `production`, the value of the `aps-environment` entitlement.
    public var name: String {
        switch base {
        case .development: "development"
        case .production: "production"
        }
    }

    public var description: String { name }

    /// Whether this is the sandbox.
    public var isDevelopment: Bool { base == .development }

    /// The other environment: where a `BadDeviceToken` token may really belong.
    public var other: APNSEnvironment { isDevelopment ? .production : .development }

    /// The device-push host, `api.push.apple.com` or `api.sandbox.push.apple.com`.
    public var host: String {
        switch base {
        case .development: "api.sandbox.push.apple.com"
        case .production: "api.push.apple.com"
        }
    }

    /// Older host names that configuration may still use; they reach the same service.
    public var legacyHosts: [String] {
        switch base {
        case .development: ["api.development.push.apple.com"]
        case .production: []
        }
    }

    /// The standard HTTPS port. ``alternatePort`` reaches the same service through firewalls that block 443.
    public static let port = 443
    /// Port 2197: a drop-in alternative to 443 on both device-push hosts.
    public static let alternatePort = 2197

    /// The host of broadcast pushes to Live Activity channels.
    public var broadcastHost: String {
        switch base {
        case .development: "api-broadcast.sandbox.push.apple.com"
        case .production: "api-broadcast.push.apple.com"
        }
    }

    /// The host of channel management requests.
    public var channelManagementHost: String {
        switch base {
        case .development: "api-manage-broadcast.sandbox.push.apple.com"
        case .production: "api-manage-broadcast.push.apple.com"
        }
    }

    /// The channel management port: 2195 in the sandbox, 2196 in production.
    public var channelManagementPort: Int { isDevelopment ? 2195 : 2196 }

    /// Whether APNs sends `apns-unique-id` in its responses (the sandbox only).
    public var sendsUniqueID: Bool { isDevelopment }
}
