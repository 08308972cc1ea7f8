import Crypto
import Foundation
import HeraldAPNS
package import HeraldSending
public import HeraldCore
public import HeraldEmulator
public import HeraldStore
public import HeraldWebhooks
public import Hummingbird
public import HummingbirdCore
public import Logging
public import NIOCore
public import Prometheus
public import ServiceLifecycle

/// What the server needs besides its configuration: where it logs, its clocks, its metrics registry.
public struct ServerDependencies: Sendable {
    /// The server's logger. Its lines never contain a full token, key, JWT or API key.
    public var logger: Logger
    /// Where record times come from (registrations, sends, leases). Tests pass a manual clock.
    public var clock: any WallClock
    /// What the sender's backoff and the worker's polling sleep on.
    public var sleepClock: any Clock<Duration>
    /// The registry `/metrics` serves. To see the sender's `herald_apns_*` metrics there, bootstrap swift-metrics
    /// with a `PrometheusMetricsFactory` over the same registry (`herald serve` does).
    public var metrics: PrometheusCollectorRegistry
    /// The jitter of webhook retries' backoff: random by default, seeded in tests.
    public var webhookJitter = WebhookJitter()
    /// How often a graceful shutdown that takes long names, at `notice`, the services it still waits for (10 s).
    public var shutdownReportInterval: Duration = .seconds(10)
    /// What that report sleeps on: its own clock, so that a test's manual `sleepClock` neither holds nor spins it.
    public var shutdownReportClock: any Clock<Duration> = ContinuousClock()

    /// - Parameters: see the properties; each has its default (system clocks, a new registry).
    public init(
        logger: Logger = Logger(label: "herald"), clock: any WallClock = SystemWallClock(),
        sleepClock: any Clock<Duration> = ContinuousClock(),
        metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
    ) {
        self.logger = logger
        self.clock = clock
        self.sleepClock = sleepClock
        self.metrics = metrics
    }
}

/// The server `buildApplication(configuration:dependencies:)` makes: a Hummingbird application (run it with
/// `runService()`, or test it with HummingbirdTesting), plus the parts tests and tools look at.
public struct HeraldApplication: ApplicationProtocol {
    public typealias Responder = RouterResponder<ServerRequestContext>

    private let application: Application<Responder>
    /// The store the server uses.
    public let store: any Store
    /// The in-process APNs emulator, when pushes go to one.
    public let emulator: APNSEmulator?
    /// The background send worker.
    package let worker: SendWorker
    /// The send engine the API's and the console's sends go through.
    let engine: SendEngine
    /// The webhook deliverer.
    public let webhooks: WebhookDeliverer
    /// The check of Live Activity starts, which the server runs every minute: `checkDue()` runs a pass now.
    public let pushToStartChecks: PushToStartChecks
    /// The count and tidy of broadcast channels, which the server runs every ten minutes: `runOnce()` runs a pass now.
    public let channelTidy: ChannelTidy
    /// Every route of the HTTP API, as `METHOD /path/{parameter}`; the console's pages (`/console…`) are not listed.
    public let routes: [String]
    /// The console's routes (`/console…`), as ``routes`` lists the API's: what the console's authorization matrix
    /// must have a row for.
    let consoleRoutes: [String]
    let console: ConsoleAuthority
    /// The port of `/metrics`'s own listener once it listens; 0 when it has none.
    let metricsListener: OneShot<Int>
    private let shutdownWatch: ShutdownWatch

    init(
        application: Application<Responder>, store: any Store, emulator: APNSEmulator?, worker: SendWorker,
        engine: SendEngine, webhooks: WebhookDeliverer, pushToStartChecks: PushToStartChecks, channelTidy: ChannelTidy,
        routes: [String], consoleRoutes: [String], console: ConsoleAuthority,
        metricsListener: OneShot<Int>, shutdownWatch: ShutdownWatch
    ) {
        self.shutdownWatch = shutdownWatch
        self.metricsListener = metricsListener
        self.application = application
        self.store = store
        self.emulator = emulator
        self.worker = worker
        self.engine = engine
        self.webhooks = webhooks
        self.pushToStartChecks = pushToStartChecks
        self.channelTidy = channelTidy
        self.routes = routes
        self.consoleRoutes = consoleRoutes
        self.console = console
    }

    /// The path of the one-time console sign-in link (`/console/sign-in/<token>`) made at start because no active API
    /// key has the `admin` scope; `nil` before the application starts, or when an admin key exists. It works once.
    public var consoleSignInLinkPath: String? { console.signInLinkPath }

    /// The port `/metrics` listens on apart from the API (`HERALD_METRICS_LISTEN`), once it listens; `nil` when it
    /// has no listener of its own. Waits for the listener while the application starts.
    public func metricsPort() async -> Int? {
        // A cancelled caller gets nil: it no longer waits for the listener.
        guard let port = try? await metricsListener.wait(), port != 0 else { return nil }
        return port
    }

    public var responder: Responder { get async throws { application.responder } }
    public var server: HTTPServerBuilder { application.server }
    public var configuration: ApplicationConfiguration { application.configuration }
    public var logger: Logger { application.logger }
    public var services: [any Service] { application.services }
    public var processesRunBeforeServerStart: [@Sendable () async throws -> Void] {
        application.processesRunBeforeServerStart
    }
    public var eventLoopGroup: any EventLoopGroup { application.eventLoopGroup }
    public func onServerRunning(_ channel: any Channel) async { await application.onServerRunning(channel) }

    /// Runs the application; from a graceful shutdown's start until it ends, logs the services it still waits for.
    public func run() async throws {
        try await shutdownWatch.reporting { try await application.run() }
    }
}

/// Builds the Herald server: the APNs destination (starting the in-process emulator when pushes go to it, and saying
/// so in the first log line), the store, one APNs client per app and environment, the routes, the background send
/// worker, and the services that run them. The store is migrated and bootstrap API keys are created when the
/// application starts, before it listens.
///
/// Used by `herald serve` and by the tests, so both run the same server.
/// - Throws: ``ConfigurationError`` when the configuration cannot work (an app without credentials outside emulator
///   mode, unreadable certificates), ``HeraldStore/StoreError`` for a bad database URL, ``HeraldEmulator/EmulatorError``
///   when the emulator cannot listen.
public func buildApplication(
    configuration: ServerConfiguration, dependencies: ServerDependencies = ServerDependencies()
) async throws -> HeraldApplication {
    let logger = dependencies.logger
    guard !configuration.apps.isEmpty else {
        throw ConfigurationError("No app is configured: set HERALD_TOPIC to your app's bundle id.")
    }
    if let problem = InstanceLock.problem(with: configuration.instanceID) {
        throw ConfigurationError(
            "The instance id \"\(configuration.instanceID)\" \(problem): set HERALD_INSTANCE_ID to a name that stays the same across restarts, such as api-1."
        )
    }
    let destination = try await APNSDestination.resolve(configuration, logger: logger)
    do {
        let store = try StoreFactory.open(url: configuration.databaseURL, clock: dependencies.clock, logger: logger)
        logger.info(
            "Store: \(redactedDatabaseURL(configuration.databaseURL)); instance: \(configuration.instanceID); apps: \(configuration.apps.map { "\($0.bundleID) (\($0.credentials.map(\.description) ?? "emulator key"))" }.joined(separator: ", "))"
        )
        let senders = try APNSSenders.make(
            apps: configuration.apps, destinations: destination.destinations, emulatorKey: destination.emulatorKey,
            sending: configuration.sending, backoffClock: dependencies.sleepClock, wallClock: dependencies.clock,
            logger: logger)
        let apps = AppDirectory(configuration.apps, pushServices: destination.registrationHosts)
        let metrics = ServerMetrics(registry: dependencies.metrics)
        let storeReady = Gate()
        let sending = SendingAssembly(
            configuration: configuration, dependencies: dependencies, store: store, senders: senders, apps: apps,
            metrics: metrics, storeReady: storeReady)
        let (budget, worker, engine) = (sending.budget, sending.worker, sending.engine)
        let access = AccessAssembly(configuration: configuration, store: store, clock: dependencies.clock)
        let console = access.console
        let checks = DeploymentCheckService(
            doctor: Doctor(configuration: configuration, options: Doctor.Options(checksListenAddress: false)),
            store: store, storeReady: storeReady, metrics: metrics, logger: logger)
        let renderer = try ConsoleRenderer(hasEmulator: destination.emulator != nil)
        let deviceFigures = DeviceFigures(
            store: store, clock: dependencies.clock, sleepClock: dependencies.sleepClock, logger: logger)
        let metricsPlacement = configuration.metrics.placement(api: configuration.listen)
        let metricsEndpoint = MetricsEndpoint(
            registry: dependencies.metrics, bearerKey: configuration.metrics.bearerKey,
            beforeScrape: { metrics.budget(budget.snapshot) })
        let routeAssembly = RouteAssembly(
            configuration: configuration, clock: dependencies.clock, store: store, apps: apps, senders: senders,
            metrics: metrics, sending: sending, access: access, renderer: renderer, emulator: destination.emulator,
            deviceFigures: deviceFigures, checks: checks, metricsEndpoint: metricsEndpoint,
            servesMetrics: metricsPlacement == .api)
        let addRoutes = routeAssembly.addRoutes(to:)
        // The error middleware must be added before the routes, yet needs them to answer 405 for a known path: the
        // routes are listed once on a router that is then dropped.
        let listing = Router(context: ServerRequestContext.self)
        addRoutes(listing)
        let watch = ShutdownWatch(
            interval: dependencies.shutdownReportInterval, clock: dependencies.shutdownReportClock, logger: logger)
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: watch.requestsAtShutdown())
        // Outside the error middleware: a page reads the reason of an error too.
        router.add(
            middleware: WebOriginMiddleware(origins: Set(configuration.apps.compactMap { $0.webPush?.origin })))
        router.add(
            middleware: ErrorMiddleware(
                routes: RouteTable(listing.routes.map { (method: $0.method.rawValue, path: "\($0.path)") }),
                storeFailed: { metrics.storeFailed() }))
        router.add(
            middleware: ConsoleNotFoundMiddleware(security: ConsoleSecurityMiddleware(renderer: renderer), authority: console))
        addRoutes(router)
        let described = router.routes.map { (console: "\($0.path)".hasPrefix("/console"), route: "\($0.method) \($0.path)") }
        let routes = described.filter { !$0.console }.map(\.route)

        var services: [any Service] = [watch.observe(store, as: "store")]
        if let emulator = destination.emulator {
            services.append(watch.observe(RunningEmulator(emulator: emulator), as: "in-process emulator"))
        }
        services += senders.namedServices.map { watch.observe($0.service, as: $0.name) }
        services.append(
            watch.observe(
                ProviderTokenSharing(
                    store: store, caches: senders.tokenCaches, interval: .seconds(60), clock: dependencies.sleepClock,
                    storeReady: storeReady, logger: logger),
                as: "provider token sharing"))
        services.append(watch.observe(worker, as: "send worker"))
        services.append(watch.observe(deviceFigures, as: "device figures"))
        services.append(watch.observe(checks, as: "deployment checks"))
        services.append(
            watch.observe(
                RetentionService(
                    store: store, settings: configuration.retention, clock: dependencies.clock,
                    sleepClock: dependencies.sleepClock, storeReady: storeReady, metrics: metrics, logger: logger),
                as: "retention"))
        let webhooks = WebhookDeliverer(
            store: store, settings: configuration.webhooks, instance: configuration.instanceID,
            clock: dependencies.clock, sleepClock: dependencies.sleepClock, jitter: dependencies.webhookJitter,
            metrics: WebhookServerMetrics(registry: dependencies.metrics), storeReady: storeReady, logger: logger)
        services.append(watch.observe(webhooks, as: "webhook deliverer"))
        let pushToStartChecks = PushToStartChecks(
            store: store, settings: configuration.liveActivities, clock: dependencies.clock, metrics: metrics,
            logger: logger)
        services.append(
            watch.observe(
                PeriodicPass(
                    work: "check Live Activity starts", isEnabled: pushToStartChecks.isEnabled,
                    interval: pushToStartChecks.interval, sleepClock: dependencies.sleepClock, storeReady: storeReady,
                    logger: logger, pass: { _ = try await pushToStartChecks.checkDue() }),
                as: "push-to-start checks"))
        let channelTidy = ChannelTidy(
            store: store, channels: ChannelOperations(store: store, apps: apps, senders: senders, audit: access.audit),
            settings: configuration.liveActivities, clock: dependencies.clock, metrics: metrics, logger: logger)
        services.append(
            watch.observe(
                PeriodicPass(
                    work: "count or tidy broadcast channels", isEnabled: true, interval: ChannelTidy.interval,
                    sleepClock: dependencies.sleepClock, storeReady: storeReady, logger: logger,
                    pass: { _ = try await channelTidy.runOnce() }),
                as: "channel tidy"))

        let metricsListener = OneShot<Int>()
        switch metricsPlacement {
        case .own(let address):
            services.append(
                watch.observe(
                    metricsEndpoint.application(listening: address, logger: logger, port: metricsListener),
                    as: "metrics listener"))
        case .api:
            metricsListener.fulfil(0)
        case .off:
            metricsListener.fulfil(0)
            logger.warning(
                "/metrics is not served: the API listens on \(configuration.listen.host), beyond loopback. Set HERALD_METRICS_LISTEN to a private address, or HERALD_METRICS_KEY to serve it behind a bearer key (docs/security.md)"
            )
        }

        let listen = configuration.listen
        let limits = configuration.limits
        var application = Application(
            router: router,
            server: .http1(
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [
                        ConnectionGuard(
                            requestTimeout: TimeAmount(limits.requestTimeout),
                            shutdownGracePeriod: TimeAmount(limits.shutdownGracePeriod), logger: logger)
                    ],
                    idleTimeout: TimeAmount(limits.idleTimeout),
                    httpDecoderConfiguration: .init(
                        maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 16 * 1024, maxHeaderFieldCount: 100))),
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maximumConnections, logger: logger)),
            services: services,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? listen.port
                logger.notice("Herald is listening on http://\(listen.host):\(port)")
                if let path = console.signInLinkPath {
                    let host = ["0.0.0.0", "::", "[::]"].contains(listen.host) ? "127.0.0.1" : listen.host
                    logger.notice(
                        "Console: open http://\(host):\(port)\(path) to sign in (works once, for an hour; no API key has the admin scope yet)"
                    )
                }
            },
            logger: logger)
        let apiKeys = configuration.apiKeys
        application.beforeServerStarts {
            try await store.migrate()
            try await bootstrap(apiKeys, in: store, clock: dependencies.clock, logger: logger)
            try await console.prepareSignInLink()
            storeReady.open()
        }
        return HeraldApplication(
            application: application, store: store, emulator: destination.emulator, worker: worker,
            engine: engine, webhooks: webhooks, pushToStartChecks: pushToStartChecks, channelTidy: channelTidy,
            routes: routes,
            consoleRoutes: described.filter(\.console).map(\.route), console: console, metricsListener: metricsListener,
            shutdownWatch: watch)
    } catch {
        await destination.emulator?.shutdown()
        throw error
    }
}

/// Makes sure the configured API keys exist, storing only salted hashes.
private func bootstrap(
    _ keys: [ServerConfiguration.BootstrapAPIKey], in store: any Store, clock: any WallClock, logger: Logger
) async throws {
    for key in keys {
        let secret = APIKeySecret(key.secret)
        if let stored = try await store.storedAPIKey(forSecret: secret) {
            if !stored.key.isActive {
                logger.warning(
                    "The API key \(key.name) from HERALD_API_KEYS was revoked: remove it from HERALD_API_KEYS, or use another secret"
                )
            } else if stored.credential.scheme == .legacySHA256 {
                try await store.replaceAPIKeyCredential(stored.key.id, with: .make(for: secret))
            }
            continue
        }
        let record = APIKey(
            id: UUID(), name: key.name, scopes: key.scopes, prefix: secret.displayPrefix, createdAt: clock.now(),
            revokedAt: nil)
        try await store.insertAPIKey(record, credential: .make(for: secret))
        logger.info("Created the API key \(key.name) from HERALD_API_KEYS")
    }
}

/// The database URL without its password, for logs.
func redactedDatabaseURL(_ url: String) -> String {
    guard let schemeEnd = url.range(of: "://"), let at = url[schemeEnd.upperBound...].firstIndex(of: "@") else {
        return url
    }
    let credentials = url[schemeEnd.upperBound..<at]
    guard let colon = credentials.firstIndex(of: ":") else { return url }
    return String(url[..<colon]) + ":***" + String(url[at...])
}

/// Keeps a started emulator running until the service group shuts down.
private struct RunningEmulator: Service {
    let emulator: APNSEmulator

    func run() async throws {
        try? await gracefulShutdown()
        await emulator.shutdown()
    }
}

/// Where pushes go, resolved from the configuration; starts the in-process emulator when that is the choice.
struct APNSDestination {
    let destinations: APNSSenders.Destinations
    let emulator: APNSEmulator?
    let emulatorKey: ProviderSigningKey?
    /// The push services a subscription's endpoint may name at registration: the configured list, and the in-process
    /// emulator's when pushes go to it.
    let registrationHosts: PushServiceHosts

    static func resolve(_ configuration: ServerConfiguration, logger: Logger) async throws -> APNSDestination {
        let withCredentials = configuration.apps.filter { $0.credentials != nil }.count
        switch configuration.apns.kind {
        case .automatic(let settings):
            if withCredentials == 0 {
                return try await startEmulator(settings, configuration: configuration, logger: logger)
            }
            guard withCredentials == configuration.apps.count else {
                throw ConfigurationError(
                    "Some apps have APNs credentials and some do not: give every app a key or certificate, or send to the emulator with HERALD_APNS=emulator."
                )
            }
            return apple(configuration, logger: logger)
        case .apple:
            return apple(configuration, logger: logger)
        case .emulator(let settings):
            return try await startEmulator(settings, configuration: configuration, logger: logger)
        case .custom(let custom):
            logger.notice(
                "APNs: pushes go to https://\(custom.host):\(custom.productionPort) (production) and https://\(custom.host):\(custom.developmentPort) (development), broadcasts to ports \(custom.broadcastProductionPort)/\(custom.broadcastDevelopmentPort), channel management to \(custom.channelsProductionPort)/\(custom.channelsDevelopmentPort), not to Apple"
            )
            // Broadcasts and channel management go to the same host: a custom host is an emulator, and Apple's
            // channel hosts would not trust its CA anyway.
            func on(_ production: Int, _ development: Int) -> (APNSEnvironment) -> APNSClientConfiguration.Destination {
                { .custom(host: custom.host, port: $0.isDevelopment ? development : production, environment: $0) }
            }
            // Its push services (a test's emulator, say) are trusted as the APNs host is.
            let trust: APNSClientConfiguration.Trust =
                custom.trustPEM.map { .systemAnd(additionalCertificatesPEM: $0) } ?? .system
            return APNSDestination(
                destinations: .init(
                    destination: on(custom.productionPort, custom.developmentPort),
                    broadcast: on(custom.broadcastProductionPort, custom.broadcastDevelopmentPort),
                    channelManagement: on(custom.channelsProductionPort, custom.channelsDevelopmentPort),
                    trust: trust, webPushHosts: configuration.webPushHosts, webPushTrust: trust),
                emulator: nil, emulatorKey: nil, registrationHosts: configuration.webPushHosts)
        }
    }

    private static func apple(_ configuration: ServerConfiguration, logger: Logger) -> APNSDestination {
        logger.notice(
            "APNs: pushes go to Apple (\(APNSEnvironment.production.host) and \(APNSEnvironment.development.host))")
        return APNSDestination(
            destinations: .init(destination: { .apple($0) }, trust: .system, webPushHosts: configuration.webPushHosts),
            emulator: nil, emulatorKey: nil, registrationHosts: configuration.webPushHosts)
    }

    private static func startEmulator(
        _ settings: APNSMode.EmulatorSettings, configuration: ServerConfiguration, logger: Logger
    ) async throws -> APNSDestination {
        let key = try ProviderSigningKey(
            privateKey: P256.Signing.PrivateKey(), keyID: APNSSenders.emulatorKeyID, teamID: APNSSenders.emulatorTeamID)
        let trusted = [key] + configuration.apps.compactMap { $0.credentials?.signingKey }
        let emulator = try APNSEmulator(
            configuration: EmulatorConfiguration(
                host: "127.0.0.1", adminPort: settings.adminPort,
                tls: .generated(caFile: settings.caFile.map { URL(fileURLWithPath: $0) }),
                trustedKeys: trusted.map { ProviderTokenVerifier.TrustedKey($0) },
                inbox: settings.countingOnly ? .countingOnly : .recording(capacity: 100)
            ).servingChannels().servingWebPush())
        do {
            try await emulator.start()
        } catch {
            throw ConfigurationError(
                "The in-process APNs emulator cannot start: \(error). If the admin port \(settings.adminPort.map(String.init) ?? "-") is taken, set HERALD_EMULATOR_ADMIN_PORT=0 (any free port) or off."
            )
        }
        guard let production = emulator.port(for: .production), let development = emulator.port(for: .development),
            let ca = emulator.certificateAuthorityPEM
        else {
            await emulator.shutdown()
            throw ConfigurationError("The in-process APNs emulator started without ports.")
        }
        // Subscriptions are sent to the emulator's push service only: never to a real one from here.
        let webPushHosts = PushServiceHosts(
            emulator.port(for: .production, service: .webPush).map { ["127.0.0.1:\($0)"] } ?? [])
        let admin = emulator.adminPort.map { "; inboxes at http://127.0.0.1:\($0)/devices/<token>/inbox" } ?? ""
        let caNote = settings.caFile.map { ", CA \($0)" } ?? ""
        logger.notice(
            "APNs emulator in this process (no APNs key configured): pushes go to it, not to Apple — production https://127.0.0.1:\(production), development https://127.0.0.1:\(development)\(caNote)\(admin)\(settings.countingOnly ? "; counting only" : ""); Web Push to its push service at \(webPushHosts), to no other"
        )
        // The channel listeners are on free ports too; a client never reaches Apple's channel hosts from here.
        func local(_ service: EmulatorService) -> (APNSEnvironment) -> APNSClientConfiguration.Destination? {
            { environment in
                emulator.port(for: environment, service: service).map {
                    .custom(host: "127.0.0.1", port: $0, environment: environment)
                }
            }
        }
        return APNSDestination(
            destinations: .init(
                destination: {
                    .custom(host: "127.0.0.1", port: $0.isDevelopment ? development : production, environment: $0)
                },
                broadcast: local(.broadcast), channelManagement: local(.channelManagement),
                trust: .only(certificatesPEM: ca), webPushHosts: webPushHosts, webPushTrust: .only(certificatesPEM: ca)),
            emulator: emulator, emulatorKey: key,
            registrationHosts: PushServiceHosts(configuration.webPushHosts.patterns + webPushHosts.patterns))
    }
}
