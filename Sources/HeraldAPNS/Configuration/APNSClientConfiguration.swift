public import Foundation
public import HeraldCore

/// How an ``APNSClient`` reaches APNs, authenticates, and behaves under load and failure.
public struct APNSClientConfiguration: Sendable {
    /// Where to send device pushes: one environment's host and port.
    public var destination: Destination
    /// Where broadcast pushes to Live Activity channels go (`POST /4/broadcasts/apps/…`). Default: Apple's
    /// `api-broadcast` host of the destination's environment, port 443.
    public var broadcastDestination: Destination
    /// Where channel-management requests go (`/1/apps/…/channels`). Default: Apple's `api-manage-broadcast` host of
    /// the destination's environment, port 2196 in production and 2195 in the sandbox.
    public var channelManagementDestination: Destination
    /// Provider token (JWT) or TLS client certificate.
    public var credentials: APNSCredentials
    /// Which server certificates to trust.
    public var trust: Trust
    /// Connections per destination. APNs advises several for volume; each carries up to the server's
    /// `MAX_CONCURRENT_STREAMS` (1,000 at Apple) requests at once. Default 4.
    public var maximumConnections: Int
    /// Once every open connection carries this many streams, another is opened (up to ``maximumConnections``) and
    /// new streams spread over all of them; each still takes up to the server's `MAX_CONCURRENT_STREAMS` when no more
    /// connections may be opened. Many hundreds of streams on one connection make one TCP connection the bottleneck
    /// (on loopback, nginx falls to about 2,000 requests/s with 400 streams on one connection). Default 100.
    public var streamsPerConnectionBeforeSpreading: Int
    /// How long to wait for TCP + TLS + the server's first SETTINGS. Default 10 s.
    public var connectTimeout: Duration
    /// How long one attempt may wait for its response before it fails with a timeout and is retried like a 5xx.
    /// Default 30 s.
    public var requestTimeout: Duration
    /// A connection with no traffic for this long is closed (APNs connections are long-lived, so the default is
    /// long: 30 minutes). `nil` keeps connections open until the client shuts down.
    public var idleTimeout: Duration?
    /// A PING is sent on a connection after this long without traffic, to keep NATs open and find dead peers.
    /// Default 60 s.
    public var pingInterval: Duration
    /// What is retried, how often, and how long to wait in between.
    public var retry: RetryPolicy

    /// - Parameters:
    ///   - broadcastDestination: where broadcasts go; `nil` is Apple's broadcast host of `destination`'s environment.
    ///   - channelManagementDestination: where channel-management requests go; `nil` is Apple's host and port for
    ///     `destination`'s environment. Both must name the same environment as `destination`.
    public init(
        destination: Destination, credentials: APNSCredentials, trust: Trust = .system,
        maximumConnections: Int = 4, connectTimeout: Duration = .seconds(10), requestTimeout: Duration = .seconds(30),
        idleTimeout: Duration? = .seconds(30 * 60), pingInterval: Duration = .seconds(60), retry: RetryPolicy = RetryPolicy(),
        streamsPerConnectionBeforeSpreading: Int = 100, broadcastDestination: Destination? = nil,
        channelManagementDestination: Destination? = nil
    ) {
        self.destination = destination
        self.broadcastDestination = broadcastDestination ?? .broadcast(destination.environment)
        self.channelManagementDestination = channelManagementDestination ?? .channelManagement(destination.environment)
        self.credentials = credentials
        self.trust = trust
        self.maximumConnections = maximumConnections
        self.streamsPerConnectionBeforeSpreading = streamsPerConnectionBeforeSpreading
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.pingInterval = pingInterval
        self.retry = retry
    }

    /// This configuration for a pool of one connection to another destination: broadcasts and channel management are
    /// light traffic next to device pushes.
    func oneConnection(to other: Destination) -> APNSClientConfiguration {
        var copy = self
        copy.destination = other
        copy.maximumConnections = 1
        copy.streamsPerConnectionBeforeSpreading = Int.max
        return copy
    }

    /// A host and port standing for one APNs environment.
    public struct Destination: Sendable, Hashable, CustomStringConvertible {
        public let host: String
        public let port: Int
        /// The environment the host serves: decides what `BadDeviceToken` means.
        public let environment: APNSEnvironment

        /// Apple's production host.
        public static let production = Destination(host: APNSEnvironment.production.host, port: APNSEnvironment.port, environment: .production)
        /// Apple's sandbox host.
        public static let development = Destination(host: APNSEnvironment.development.host, port: APNSEnvironment.port, environment: .development)

        /// Apple's host for an environment.
        public static func apple(_ environment: APNSEnvironment) -> Destination {
            environment.isDevelopment ? .development : .production
        }

        /// Apple's broadcast host for an environment (`api-broadcast(.sandbox).push.apple.com:443`).
        public static func broadcast(_ environment: APNSEnvironment) -> Destination {
            Destination(host: environment.broadcastHost, port: APNSEnvironment.port, environment: environment)
        }

        /// Apple's channel-management host for an environment (`api-manage-broadcast(.sandbox).push.apple.com`, port
        /// 2196 in production, 2195 in the sandbox).
        public static func channelManagement(_ environment: APNSEnvironment) -> Destination {
            Destination(host: environment.channelManagementHost, port: environment.channelManagementPort, environment: environment)
        }

        /// Another host, such as `herald emulator` on loopback.
        public static func custom(host: String, port: Int, environment: APNSEnvironment) -> Destination {
            Destination(host: host, port: port, environment: environment)
        }

        public var description: String { "\(host):\(port) (\(environment))" }
    }

    /// Server certificate trust.
    public enum Trust: Sendable {
        /// The system's trust store (Apple's servers chain to USERTrust RSA).
        case system
        /// The system's trust store plus the CA certificates in this PEM (the emulator's CA file).
        case systemAnd(additionalCertificatesPEM: String)
        /// Only the CA certificates in this PEM.
        case only(certificatesPEM: String)

        /// Adds a PEM file's certificates to the system store.
        public static func adding(caFile: URL) throws -> Trust {
            do {
                return .systemAnd(additionalCertificatesPEM: try String(contentsOf: caFile, encoding: .utf8))
            } catch {
                throw APNSClientError.configuration("Cannot read the CA file \(caFile.path): check the path.")
            }
        }
    }
}

/// How the client proves who it is.
public struct APNSCredentials: Sendable {
    enum Kind: Sendable {
        case token(ProviderTokenCache)
        case certificate(chainPEM: String, privateKeyPEM: String)
        case pkcs12(data: [UInt8], passphrase: String?)
        case none
    }

    let kind: Kind

    /// No connection credentials: a Web Push service's connections, where each request carries its own VAPID
    /// authorization.
    public static let none = APNSCredentials(kind: .none)

    /// Token-based authentication: every request carries the cache's current provider token, one JWT per key for
    /// the whole process. Share the cache between clients of the same key.
    public static func token(_ cache: ProviderTokenCache) -> APNSCredentials { APNSCredentials(kind: .token(cache)) }

    /// A signing key with its own cache.
    public static func token(_ key: ProviderSigningKey) -> APNSCredentials { .token(ProviderTokenCache(key: key)) }

    /// Certificate-based authentication from PEM text: the certificate (chain) and its private key.
    public static func certificate(chainPEM: String, privateKeyPEM: String) -> APNSCredentials {
        APNSCredentials(kind: .certificate(chainPEM: chainPEM, privateKeyPEM: privateKeyPEM))
    }

    /// Certificate-based authentication from a PKCS#12 (`.p12`) file as Keychain exports it.
    public static func pkcs12(_ data: [UInt8], passphrase: String?) -> APNSCredentials {
        APNSCredentials(kind: .pkcs12(data: data, passphrase: passphrase))
    }

    var tokenCache: ProviderTokenCache? {
        if case .token(let cache) = kind { cache } else { nil }
    }
}
