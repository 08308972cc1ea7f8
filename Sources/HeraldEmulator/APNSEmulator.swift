public import Foundation
public import HeraldCore
import NIOCore
import NIOSSL
public import ServiceLifecycle
import Synchronization

/// A local APNs: Apple's provider API over HTTP/2 and TLS, with virtual devices, inboxes and injected faults.
///
/// Serves both environments at once, each on its own port, so a development token sent to the production port
/// fails with `BadDeviceToken` exactly as at Apple. Use it from tests with ``withRunning(_:_:)``, or as a
/// `Service` in a `ServiceGroup` (that is what `herald emulator` does).
public final class APNSEmulator: Service, Sendable {
    public let configuration: EmulatorConfiguration
    let registry: DeviceRegistry
    let faultInjector: FaultInjector
    let channelRegistry: ChannelRegistry
    /// The Web Push service's subscriptions and inboxes (its listener is on when ``EmulatorConfiguration/webPushPort``
    /// is set).
    public let webPush: WebPushService
    private let verifier: ProviderTokenVerifier
    private let serverTLS: (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey, caPEM: String?)
    private let clientCertificateAuthority: [NIOSSLCertificate]?
    private let state = Mutex(RunState())

    private struct RunState {
        var channels: [any Channel] = []
        var ports: [String: Int] = [:]
        var started = false
    }

    /// Prepares the emulator: checks the configuration and makes the TLS identity. Binds nothing yet.
    /// - Throws: ``EmulatorError`` when the configuration or the certificate files are not usable.
    public init(configuration: EmulatorConfiguration) throws(EmulatorError) {
        self.configuration = configuration
        let faults = try configuration.faults.validated()
        guard configuration.maxConcurrentStreams >= 1 else { throw EmulatorError("maxConcurrentStreams must be at least 1.") }
        if case .recording(let capacity) = configuration.inbox, capacity < 1 {
            throw EmulatorError("The inbox capacity must be at least 1 (or use counting-only mode).")
        }
        guard configuration.channels.limitPerApp >= 0 else { throw EmulatorError("The channel limit per app cannot be negative.") }
        if let budget = configuration.liveActivityBudget, budget < 0 {
            throw EmulatorError("The Live Activity budget cannot be negative: give updates per hour, or nil for no budget.")
        }
        registry = DeviceRegistry(
            mode: configuration.deviceMode, inbox: configuration.inbox, seed: configuration.seed, liveActivityBudget: configuration.liveActivityBudget)
        channelRegistry = ChannelRegistry(limitPerApp: configuration.channels.limitPerApp, seed: configuration.seed)
        if case .recording(let capacity) = configuration.inbox {
            webPush = WebPushService(capacity: capacity)
        } else {
            webPush = WebPushService(capacity: 0)
        }
        faultInjector = FaultInjector(configuration: faults, seed: configuration.seed)
        verifier = ProviderTokenVerifier(trustedKeys: configuration.trustedKeys)
        do {
            switch configuration.tls {
            case .generated(let caFile):
                let authority = try LocalCertificateAuthority()
                let server = try authority.issueServerCertificate(dnsNames: ["localhost", configuration.host])
                serverTLS = (
                    [try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem)],
                    try NIOSSLPrivateKey(bytes: Array(server.privateKeyPEM.utf8), format: .pem),
                    authority.certificatePEM)
                if let caFile {
                    try authority.certificatePEM.write(to: caFile, atomically: true, encoding: .utf8)
                }
            case .files(let chain, let key):
                serverTLS = (try NIOSSLCertificate.fromPEMFile(chain.path), try NIOSSLPrivateKey(file: key.path, format: .pem), nil)
            }
            clientCertificateAuthority = try configuration.clientCertificateAuthorityPEM.map {
                try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))
            }
        } catch let error as EmulatorError {
            throw error
        } catch {
            throw EmulatorError("Cannot set up TLS: \(error). Check the certificate and key files (PEM).")
        }
    }

    // MARK: Lifecycle

    /// Binds the production, development and admin ports. Returns once they accept connections.
    public func start() async throws {
        guard state.withLock({ state in
            defer { state.started = true }
            return !state.started
        }) else { throw EmulatorError("The emulator is already started.") }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: serverTLS.chain.map { .certificate($0) }, privateKey: .privateKey(serverTLS.key))
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        if let authority = clientCertificateAuthority {
            tls.certificateVerification = .optionalVerification
            tls.trustRoots = .certificates(authority)
        }
        let sslContext = try NIOSSLContext(configuration: tls)
        var bound: [(String, any Channel)] = []
        // Which listener is being bound, so a failure names its port.
        var attempt = ("production", configuration.productionPort)
        do {
            for service in EmulatorService.allCases {
                for environment in [APNSEnvironment.production, .development] {
                    guard let port = configuration.port(for: service, environment) else { continue }
                    let name = service.label(environment)
                    attempt = (name, port)
                    var processor = RequestProcessor(environment: environment, verifier: verifier, registry: registry, faults: faultInjector)
                    processor.service = service
                    if service == .webPush {
                        processor.webPush = webPush
                    } else if service != .devicePush {
                        processor.channels = channelRegistry
                        processor.channelSettings = configuration.channels
                        processor.logger = configuration.logger
                    }
                    let context = EmulatorListener.Context(
                        processor: processor, sslContext: sslContext, maxConcurrentStreams: configuration.maxConcurrentStreams,
                        faults: faultInjector, registry: registry, clock: configuration.clock)
                    bound.append((name, try await EmulatorListener.bind(host: configuration.host, port: port, context: context)))
                }
            }
            if let adminPort = configuration.adminPort {
                attempt = ("admin", adminPort)
                bound.append(("admin", try await AdminServer.bind(host: configuration.host, port: adminPort, emulator: self)))
            }
        } catch {
            for (_, channel) in bound { try? await channel.close() }
            throw EmulatorError("Cannot listen on \(configuration.host):\(attempt.1) (the \(attempt.0) port): \(error). Is the port in use? Pass 0 to pick a free one.")
        }
        state.withLock { state in
            for (name, channel) in bound {
                state.channels.append(channel)
                state.ports[name] = channel.localAddress?.port
            }
        }
        if let port = state.withLock({ $0.ports[EmulatorService.webPush.label(.production)] }) {
            webPush.setOrigin("https://\(configuration.host):\(port)")
        }
    }

    /// Closes every port and connection.
    public func shutdown() async {
        let channels = state.withLock { state in
            defer { state.channels = [] }
            return state.channels
        }
        for channel in channels { try? await channel.close() }
    }

    /// Serves until the task is cancelled or a graceful shutdown is triggered.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Starts an emulator, runs `body` with it, and shuts it down, also when `body` throws.
    public static func withRunning<Result: Sendable>(
        _ configuration: EmulatorConfiguration, _ body: (APNSEmulator) async throws -> Result
    ) async throws -> Result {
        let emulator = try APNSEmulator(configuration: configuration)
        try await emulator.start()
        do {
            let result = try await body(emulator)
            await emulator.shutdown()
            return result
        } catch {
            await emulator.shutdown()
            throw error
        }
    }

    // MARK: Where it listens

    /// The port standing in for an environment's APNs host; `nil` before ``start()``.
    public func port(for environment: APNSEnvironment) -> Int? {
        state.withLock { $0.ports[environment.name] }
    }

    /// The port standing in for one of an environment's APNs hosts: device pushes, broadcasts or channel management;
    /// `nil` when that listener is off, or before ``start()``.
    public func port(for environment: APNSEnvironment, service: EmulatorService) -> Int? {
        state.withLock { $0.ports[service.label(environment)] }
    }

    /// The admin API's port; `nil` when off or before ``start()``.
    public var adminPort: Int? { state.withLock { $0.ports["admin"] } }

    /// The PEM of the generated CA that signed the server certificate (nil with certificate files).
    public var certificateAuthorityPEM: String? { serverTLS.caPEM }

    // MARK: Devices

    /// Creates a device: the given token, or a random one of `byteCount` bytes.
    public func createDevice(token: DeviceToken? = nil, byteCount: Int = 32, environment: APNSEnvironment, topic: String) throws(EmulatorError) -> VirtualDevice {
        guard (DeviceToken.minimumByteCount...DeviceToken.maximumByteCount).contains(byteCount) else {
            throw EmulatorError("A token has \(DeviceToken.minimumByteCount) to \(DeviceToken.maximumByteCount) bytes.")
        }
        guard RequestProcessor.isWellFormedTopic(topic), !topic.isEmpty else { throw EmulatorError("\"\(topic)\" is not a topic: use a bundle id such as com.example.app.") }
        return try registry.create(token: token, byteCount: byteCount, environment: environment, topic: topic)
    }

    public func devices() -> [VirtualDevice] { registry.devices() }
    public func device(_ token: DeviceToken) -> VirtualDevice? { registry.device(token) }
    @discardableResult public func removeDevice(_ token: DeviceToken) -> Bool { registry.remove(token) }

    /// From now on APNs answers 410 `Unregistered` with this timestamp (the app was removed).
    public func markUnregistered(_ token: DeviceToken, at date: Date? = nil) throws(EmulatorError) {
        try registry.setState(token, .unregistered(since: date ?? configuration.clock.now()))
    }

    /// From now on APNs answers 410 `ExpiredToken`.
    public func markExpired(_ token: DeviceToken) throws(EmulatorError) { try registry.setState(token, .expired) }

    /// Makes the token valid again (the app was reinstalled and registered).
    public func reactivate(_ token: DeviceToken) throws(EmulatorError) { try registry.setState(token, .active) }

    /// Takes the device offline (it keeps only the newest notification) or back online (that one arrives unless
    /// its expiration passed).
    public func setOnline(_ token: DeviceToken, _ online: Bool) throws(EmulatorError) {
        try registry.setOnline(token, online, now: configuration.clock.now())
    }

    /// Whether a push-to-start the device receives starts its Live Activity (the default) or is ignored, as by a
    /// device whose push-to-start token went stale.
    public func setStartsActivities(_ token: DeviceToken, _ starts: Bool) throws(EmulatorError) {
        try registry.setStartsActivities(token, starts)
    }

    /// The Live Activities push-to-starts started, in the order they started: what each device's app would register
    /// an update token for.
    public func startedActivities() -> [StartedActivity] { registry.startedActivities() }

    /// What the device received, oldest first.
    public func inbox(for token: DeviceToken) throws(EmulatorError) -> [InboxEntry] { try registry.inbox(token) }
    public func clearInbox(for token: DeviceToken) throws(EmulatorError) { try registry.clearInbox(token) }

    // MARK: Channels

    /// Every channel, oldest first, with its subscribers.
    public func channels() -> [EmulatedChannel] {
        channelRegistry.all().map(EmulatedChannel.init)
    }

    /// Subscribes a device to a channel, as a Live Activity started with `input-push-channel` does: every broadcast
    /// on the channel then lands in its inbox.
    /// - Throws: ``EmulatorError`` when the device or channel does not exist, or they differ in environment or app.
    public func subscribe(_ token: DeviceToken, to channelID: String) throws(EmulatorError) {
        try channelRegistry.setSubscribed(true, device: try knownDevice(token), to: channelID)
    }

    /// Ends a device's subscription to a channel (its Live Activity ended).
    public func unsubscribe(_ token: DeviceToken, from channelID: String) throws(EmulatorError) {
        try channelRegistry.setSubscribed(false, device: try knownDevice(token), to: channelID)
    }

    /// The channels a device is subscribed to, oldest first.
    public func subscriptions(of token: DeviceToken) throws(EmulatorError) -> [String] {
        channelRegistry.subscriptions(of: try knownDevice(token))
    }

    private func knownDevice(_ token: DeviceToken) throws(EmulatorError) -> VirtualDevice {
        guard let device = registry.device(token) else { throw EmulatorError("No device with token \(token.redacted): create it first.") }
        return device
    }

    // MARK: Live Activity budget

    /// Priority-10 Live Activity updates a device takes per activity and hour (more are accepted but dropped and
    /// counted); `nil` for no budget. Starts as ``EmulatorConfiguration/liveActivityBudget``.
    public var liveActivityBudget: Int? { registry.liveActivityBudget }

    /// Changes the budget while running.
    public func setLiveActivityBudget(_ updatesPerHour: Int?) throws(EmulatorError) {
        if let updatesPerHour, updatesPerHour < 0 { throw EmulatorError("The Live Activity budget cannot be negative.") }
        registry.liveActivityBudget = updatesPerHour
    }

    /// How each Live Activity used its budget in the last hour, and what was dropped.
    public func liveActivityBudgetUse() -> [LiveActivityBudgetUse] {
        registry.budgetUse(now: configuration.clock.now())
    }

    // MARK: Counters and faults

    public var counters: EmulatorCounters { registry.currentCounters() }

    /// Returns once `condition` holds for the counters — at once if it does already — or when the task is cancelled:
    /// for a test that must know what the emulator received without polling. Looked at again whenever a request is
    /// accepted, a fault injected or a stream reset by the client.
    public func waitForCounters(_ condition: @escaping @Sendable (EmulatorCounters) -> Bool) async {
        await registry.waitForCounters(condition)
    }
    public func resetCounters() { registry.resetCounters() }

    public var faults: FaultConfiguration { faultInjector.configuration }

    /// Changes the injected faults while running.
    public func setFaults(_ faults: FaultConfiguration) throws(EmulatorError) {
        faultInjector.update(try faults.validated())
    }
}
