public import Foundation
public import HeraldCore
public import Logging

/// How an ``APNSEmulator`` listens, whom it trusts and how it behaves.
public struct EmulatorConfiguration: Sendable {
    /// The address to listen on. Loopback by default; the emulator is a local stand-in, not a public service.
    public var host: String
    /// The port standing in for `api.push.apple.com:443`; 0 picks a free port.
    public var productionPort: Int
    /// The port standing in for `api.sandbox.push.apple.com:443`; 0 picks a free port.
    public var developmentPort: Int
    /// The port standing in for `api-broadcast.push.apple.com:443` (broadcasts to channels); `nil` (the default) turns
    /// it off, 0 picks a free port. The four channel listeners are off unless asked for: ``servingChannels()`` puts
    /// them all on free ports.
    public var broadcastProductionPort: Int?
    /// The port standing in for `api-broadcast.sandbox.push.apple.com:443`; `nil` turns it off, 0 picks a free port.
    public var broadcastDevelopmentPort: Int?
    /// The port standing in for `api-manage-broadcast.push.apple.com:2196` (channel management); `nil` turns it off,
    /// 0 picks a free port.
    public var channelManagementProductionPort: Int?
    /// The port standing in for `api-manage-broadcast.sandbox.push.apple.com:2195`; `nil` turns it off, 0 picks a free
    /// port.
    public var channelManagementDevelopmentPort: Int?
    /// The plain HTTP/1.1 JSON admin API's port; `nil` turns it off, 0 picks a free port.
    public var adminPort: Int?
    /// The Web Push service's port (`POST /push/<subscription>`, docs/emulator.md "Web Push"); `nil`: off.
    public var webPushPort: Int?
    /// The server certificate.
    public var tls: TLS
    /// The provider token keys the emulator accepts.
    public var trustedKeys: [ProviderTokenVerifier.TrustedKey]
    /// Client certificates issued by this CA (PEM) authenticate a connection, for certificate-based auth.
    public var clientCertificateAuthorityPEM: String?
    /// Whether unknown device tokens are accepted on first use (``DeviceMode/permissive``) or refused.
    public var deviceMode: DeviceMode
    /// The `MAX_CONCURRENT_STREAMS` a connection gets after its first request with a valid provider token.
    public var maxConcurrentStreams: Int
    /// What inboxes keep.
    public var inbox: InboxMode
    /// Failures to inject.
    public var faults: FaultConfiguration
    /// The seed of every random choice (faults, latency, generated tokens): the same seed, the same run.
    public var seed: UInt64
    /// Where the emulator reads the time: JWT ages, the 20-minute token rule, 410 timestamps, expirations, stored
    /// broadcasts' 8 hours, the Live Activity budget's hour.
    public var clock: any WallClock
    /// Broadcast channels, their limit and which apps have the Broadcast capability.
    public var channels: Channels
    /// Priority-10 Live Activity updates a device takes per activity and hour; more are accepted (200) but dropped
    /// on the device and counted. `nil`: no budget.
    public var liveActivityBudget: Int?
    /// Where the emulator logs channels created and deleted; nothing by default.
    public var logger: Logger

    public init(
        host: String = "127.0.0.1", productionPort: Int = 0, developmentPort: Int = 0, adminPort: Int? = 0,
        tls: TLS = .generated(caFile: nil), trustedKeys: [ProviderTokenVerifier.TrustedKey] = [],
        clientCertificateAuthorityPEM: String? = nil, deviceMode: DeviceMode = .permissive,
        maxConcurrentStreams: Int = 1000, inbox: InboxMode = .recording(capacity: 100),
        faults: FaultConfiguration = FaultConfiguration(), seed: UInt64 = 0x4845_5241_4C44,
        clock: any WallClock = SystemWallClock(), broadcastProductionPort: Int? = nil, broadcastDevelopmentPort: Int? = nil,
        channelManagementProductionPort: Int? = nil, channelManagementDevelopmentPort: Int? = nil,
        channels: Channels = Channels(), liveActivityBudget: Int? = nil,
        logger: Logger = Logger(label: "herald.emulator", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.clock = clock
        self.broadcastProductionPort = broadcastProductionPort
        self.broadcastDevelopmentPort = broadcastDevelopmentPort
        self.channelManagementProductionPort = channelManagementProductionPort
        self.channelManagementDevelopmentPort = channelManagementDevelopmentPort
        self.channels = channels
        self.liveActivityBudget = liveActivityBudget
        self.logger = logger
        self.host = host
        self.productionPort = productionPort
        self.developmentPort = developmentPort
        self.adminPort = adminPort
        self.tls = tls
        self.trustedKeys = trustedKeys
        self.clientCertificateAuthorityPEM = clientCertificateAuthorityPEM
        self.deviceMode = deviceMode
        self.maxConcurrentStreams = maxConcurrentStreams
        self.inbox = inbox
        self.faults = faults
        self.seed = seed
    }

    /// Broadcast channels (apns-protocol.md §1.4).
    public struct Channels: Sendable, Hashable {
        /// Channels one app may have in one environment; creating more is `CannotCreateChannelConfig`. Apple's: 10,000.
        public var limitPerApp: Int
        /// The bundle ids with the Broadcast capability; the others get `FeatureNotEnabled`. `nil`: every app.
        public var enabledBundleIDs: Set<String>?

        public init(limitPerApp: Int = 10_000, enabledBundleIDs: Set<String>? = nil) {
            self.limitPerApp = limitPerApp
            self.enabledBundleIDs = enabledBundleIDs
        }
    }

    /// This configuration with the Web Push service on a free port.
    public func servingWebPush() -> EmulatorConfiguration {
        var copy = self
        copy.webPushPort = 0
        return copy
    }

    /// This configuration with the broadcast and channel-management listeners of both environments on free ports.
    public func servingChannels() -> EmulatorConfiguration {
        var copy = self
        copy.broadcastProductionPort = 0
        copy.broadcastDevelopmentPort = 0
        copy.channelManagementProductionPort = 0
        copy.channelManagementDevelopmentPort = 0
        return copy
    }

    /// The port of one listener, `nil` when it is off.
    func port(for service: EmulatorService, _ environment: APNSEnvironment) -> Int? {
        switch (service, environment.isDevelopment) {
        case (.devicePush, false): productionPort
        case (.devicePush, true): developmentPort
        case (.broadcast, false): broadcastProductionPort
        case (.broadcast, true): broadcastDevelopmentPort
        case (.channelManagement, false): channelManagementProductionPort
        case (.channelManagement, true): channelManagementDevelopmentPort
        case (.webPush, false): webPushPort
        case (.webPush, true): nil
        }
    }

    /// Where the server certificate comes from.
    public enum TLS: Sendable {
        /// A local CA and a `localhost`/`127.0.0.1` server certificate made at start; the CA certificate is written to
        /// `caFile` (when given) so clients can trust it.
        case generated(caFile: URL?)
        /// A certificate chain and private key in PEM files.
        case files(certificateChain: URL, privateKey: URL)
    }

    /// How the emulator treats device tokens it has not seen.
    public enum DeviceMode: String, Sendable, CaseIterable {
        /// Any well-formed token is accepted on first use and becomes a device of that environment and topic.
        case permissive
        /// Only devices created through the API exist; anything else is `BadDeviceToken`.
        case strict
    }

    /// What a device's inbox keeps.
    public enum InboxMode: Sendable, Hashable {
        /// Each device keeps its last `capacity` notifications, headers and payload.
        case recording(capacity: Int)
        /// Nothing is stored; only totals, per-reason counts and duplicate apns-ids are kept (for benchmarks).
        case countingOnly
    }
}

/// The three APIs of APNs, each on its own host (and port) per environment (apns-protocol.md §1.1).
public enum EmulatorService: String, Sendable, Hashable, CaseIterable {
    /// `POST /3/device/<token>` on `api(.sandbox).push.apple.com`.
    case devicePush
    /// `POST /4/broadcasts/apps/<bundle-id>` on `api-broadcast(.sandbox).push.apple.com`.
    case broadcast
    /// `/1/apps/<bundle-id>/channels` and `/all-channels` on `api-manage-broadcast(.sandbox).push.apple.com`.
    case channelManagement
    /// `POST /push/<subscription>`: a Web Push service (RFC 8030) such as `web.push.apple.com`; one port, no
    /// environments.
    case webPush

    /// How the emulator's first line and port names call it: `production`, `broadcast production`, `channels production`.
    func label(_ environment: APNSEnvironment) -> String {
        switch self {
        case .devicePush: environment.name
        case .broadcast: "broadcast \(environment.name)"
        case .channelManagement: "channels \(environment.name)"
        case .webPush: "web push"
        }
    }
}

/// Failures the emulator injects, so senders can be tested against a misbehaving APNs. Changeable at run time.
public struct FaultConfiguration: Sendable, Hashable, Codable {
    /// Fraction of valid requests answered 429 `TooManyRequests`.
    public var tooManyRequests: Double
    /// Fraction answered 500 `InternalServerError`.
    public var internalServerError: Double
    /// Fraction answered 503 `ServiceUnavailable`.
    public var serviceUnavailable: Double
    /// Fraction answered 503 `Shutdown`.
    public var shutdown: Double
    /// After this many streams on a connection, answer that stream and send GOAWAY; later streams go unanswered.
    public var goAwayAfterStreams: Int?
    /// After this many streams on a connection, close it without GOAWAY: that stream is processed (delivered when
    /// valid) but never answered, and the streams not yet read get no answer either. The client cannot tell what
    /// arrived, as when a connection to APNs dies mid-flight.
    public var closeAfterStreams: Int?
    /// Fraction of requests after which the connection gets a GOAWAY.
    public var goAwayProbability: Double
    /// Fraction of requests whose connection is reset (closed without GOAWAY) instead of answered.
    public var resetProbability: Double
    /// Fraction of requests that are never answered (the stream stays open).
    public var noResponseProbability: Double
    /// Fraction of requests refused with RST_STREAM `REFUSED_STREAM` before they are processed: nothing is delivered,
    /// and the client may send them again (RFC 9113 §8.7). 1 refuses every stream.
    public var refusedStreamProbability: Double
    /// Delay added before each response.
    public var latency: Latency

    public init(
        tooManyRequests: Double = 0, internalServerError: Double = 0, serviceUnavailable: Double = 0,
        shutdown: Double = 0, goAwayAfterStreams: Int? = nil, goAwayProbability: Double = 0,
        resetProbability: Double = 0, noResponseProbability: Double = 0, refusedStreamProbability: Double = 0,
        latency: Latency = .none, closeAfterStreams: Int? = nil
    ) {
        self.tooManyRequests = tooManyRequests
        self.internalServerError = internalServerError
        self.serviceUnavailable = serviceUnavailable
        self.shutdown = shutdown
        self.goAwayAfterStreams = goAwayAfterStreams
        self.closeAfterStreams = closeAfterStreams
        self.goAwayProbability = goAwayProbability
        self.resetProbability = resetProbability
        self.noResponseProbability = noResponseProbability
        self.refusedStreamProbability = refusedStreamProbability
        self.latency = latency
    }

    /// Added response latency, in milliseconds.
    public enum Latency: Sendable, Hashable, Codable {
        case none
        case fixed(milliseconds: Double)
        case uniform(minimumMilliseconds: Double, maximumMilliseconds: Double)
        case normal(meanMilliseconds: Double, standardDeviationMilliseconds: Double)
    }

    /// Checks that every fraction is within 0…1 and they add up to at most 1.
    public func validated() throws(EmulatorError) -> FaultConfiguration {
        let fractions: [(String, Double)] = [
            ("tooManyRequests", tooManyRequests), ("internalServerError", internalServerError),
            ("serviceUnavailable", serviceUnavailable), ("shutdown", shutdown), ("goAwayProbability", goAwayProbability),
            ("resetProbability", resetProbability), ("noResponseProbability", noResponseProbability),
            ("refusedStreamProbability", refusedStreamProbability),
        ]
        for (name, value) in fractions where !(0...1).contains(value) {
            throw EmulatorError("Fault \(name) is \(value); fractions must be between 0 and 1.")
        }
        let statusTotal = tooManyRequests + internalServerError + serviceUnavailable + shutdown
        if statusTotal > 1 { throw EmulatorError("The status faults add up to \(statusTotal), more than 1.") }
        if let after = goAwayAfterStreams, after < 1 { throw EmulatorError("goAwayAfterStreams must be at least 1.") }
        if let after = closeAfterStreams, after < 1 { throw EmulatorError("closeAfterStreams must be at least 1.") }
        switch latency {
        case .none: break
        case .fixed(let ms) where ms < 0: throw EmulatorError("Latency cannot be negative.")
        case .uniform(let low, let high) where low < 0 || high < low: throw EmulatorError("Uniform latency needs 0 ≤ minimum ≤ maximum.")
        case .normal(let mean, let deviation) where mean < 0 || deviation < 0: throw EmulatorError("Normal latency needs a non-negative mean and deviation.")
        default: break
        }
        return self
    }
}

/// An emulator problem: bad configuration, a port in use, an unknown device.
public struct EmulatorError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
