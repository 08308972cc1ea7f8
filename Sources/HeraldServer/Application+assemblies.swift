import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldWebhooks
import Hummingbird
import Logging
import ServiceLifecycle

/// The parts ``buildApplication(configuration:dependencies:)`` assembles, each named for what it is: the send engine,
/// who may call, the routes, the background services. Each is made once per instance.

/// The send engine and what it runs on: the delivery of one notification, the instance's in-flight budget, the fan-out,
/// broadcasts, the background worker and the engine the API's and console's sends go through.
struct SendingAssembly {
    let budget: InFlightBudget
    let broadcaster: Broadcaster
    let worker: SendWorker
    let engine: SendEngine

    init(
        configuration: ServerConfiguration, dependencies: ServerDependencies, store: any Store, senders: APNSSenders,
        apps: AppDirectory, metrics: ServerMetrics, storeReady: Gate
    ) {
        let logger = dependencies.logger
        let delivery = Delivery(store: store, sender: senders, metrics: metrics, logger: logger, clock: dependencies.clock)
        // Every background send of this instance shares one in-flight budget (docs/sending.md).
        budget = InFlightBudget(total: configuration.sending.maximumInFlight)
        var fanOut = FanOut(
            store: store, delivery: delivery, pageSize: configuration.sending.pageSize,
            maximumInFlight: configuration.sending.maximumInFlight, clock: dependencies.clock,
            sleepClock: dependencies.sleepClock, budget: budget, metrics: metrics)
        if configuration.liveActivities.pushToStartRate > 0 {
            fanOut.pushToStart = PushToStartPacer(
                store: store, perSecond: configuration.liveActivities.pushToStartRate, clock: dependencies.clock,
                sleepClock: dependencies.sleepClock, metrics: metrics)
        }
        broadcaster = Broadcaster(store: store, client: { senders.client(bundleID: $0, environment: $1) }, metrics: metrics)
        worker = SendWorker(
            store: store, servedApps: Set(apps.apps.keys), legacyJobs: RequestBodyJobs(apps: apps, store: store),
            fanOut: fanOut, broadcaster: broadcaster, sending: configuration.sending,
            instance: configuration.instanceID, clock: dependencies.sleepClock,
            wallClock: dependencies.clock, storeReady: storeReady, logger: logger,
            appShares: Dictionary(
                configuration.apps.map {
                    ($0.bundleID, InFlightBudget.AppShare(priority: $0.sendPriority, weight: Double($0.sendWeight)))
                }
            ) { $1 }, metrics: metrics)
        engine = SendEngine(
            store: store, fanOut: fanOut, broadcaster: broadcaster, worker: worker, metrics: metrics,
            inlineLimit: configuration.limits.inlineSendLimit,
            campaignThreshold: configuration.sending.campaignThreshold)
    }
}

/// Who may call, and how often: API keys and console sessions, idempotency keys, the registration and receipt rate
/// limits, and the audit trail of what callers change.
struct AccessAssembly {
    let registrationLimiter: RateLimiter?
    let eventLimiter: RateLimiter?
    let audit: AuditTrail
    let console: ConsoleAuthority
    let keys: APIKeyVerifier
    let idempotency: IdempotencyMiddleware

    init(configuration: ServerConfiguration, store: any Store, clock: any WallClock) {
        let perMinute = configuration.limits.registrationsPerMinute
        registrationLimiter = perMinute > 0 ? RateLimiter(perMinute: perMinute) : nil
        // Receipts come from the same apps as registrations, at the same pace: the same limit, a bucket of its own.
        eventLimiter = perMinute > 0 ? RateLimiter(perMinute: perMinute, subject: "event reports") : nil
        audit = AuditTrail(store: store, clock: clock)
        console = ConsoleAuthority(store: store, clock: clock, settings: configuration.console)
        keys = APIKeyVerifier(store: store, clock: clock, audit: audit, consoleSessions: console)
        // A request may take as long as its sends' retries: a claim is only abandoned well after that.
        idempotency = IdempotencyMiddleware(
            store: store, clock: clock, window: configuration.limits.idempotencyWindow,
            staleAfter: configuration.sending.retry.retryWindow + configuration.limits.requestTimeout + .seconds(60),
            bodyLimit: configuration.limits.sendBodyBytes)
    }
}

/// Every route of the API and the console, with the controllers that answer them.
struct RouteAssembly {
    let configuration: ServerConfiguration
    let clock: any WallClock
    let store: any Store
    let apps: AppDirectory
    let senders: APNSSenders
    let metrics: ServerMetrics
    let sending: SendingAssembly
    let access: AccessAssembly
    let renderer: ConsoleRenderer
    let emulator: APNSEmulator?
    let deviceFigures: DeviceFigures
    let checks: DeploymentCheckService
    let metricsEndpoint: MetricsEndpoint
    let servesMetrics: Bool

    func addRoutes(to router: Router<ServerRequestContext>) {
        let (keys, audit, engine) = (access.keys, access.audit, sending.engine)
        // Each scope's key check is made here, once, for every route of the scope.
        let sendScope = router.group().add(middleware: APIKeyAuthenticator(keys: keys, scope: .send))
            .add(middleware: access.idempotency)
        let adminScope = router.group().add(middleware: APIKeyAuthenticator(keys: keys, scope: .admin))
        RegistrationController(
            store: store, apps: apps, rateLimiter: access.registrationLimiter, metrics: metrics, audit: audit
        ).addRoutes(to: router)
        EventsController(store: store, apps: apps, rateLimiter: access.eventLimiter, metrics: metrics).addRoutes(to: router)
        WebClientController().addRoutes(to: router)
        let sends = Sends(apps: apps, clock: clock)
        SendController(
            store: store, apps: apps, sends: sends, engine: engine, limits: configuration.limits, clock: clock, audit: audit
        ).addRoutes(to: sendScope)
        let activities = ActivityOperations(
            store: store, sends: sends, engine: engine, clock: clock, metrics: metrics, audit: audit,
            updateBudget: configuration.liveActivities.updateBudget,
            checksStarts: configuration.liveActivities.startCheckAfter > 0)
        ActivityController(store: store, apps: apps, operations: activities, limits: configuration.limits)
            .addRoutes(to: sendScope)
        let channels = ChannelOperations(store: store, apps: apps, senders: senders, audit: audit)
        ChannelController(
            store: store, apps: apps, operations: channels, engine: engine, limits: configuration.limits, clock: clock,
            audit: audit
        ).addRoutes(to: sendScope)
        DeviceController(store: store, apps: apps).addRoutes(to: adminScope)
        let preferences = PreferenceChanges(store: store, clock: clock, audit: audit)
        PreferenceController(
            store: store, apps: apps, rateLimiter: access.registrationLimiter, preferences: preferences
        ).addRoutes(to: router, admin: adminScope)
        let webhooks = WebhookEndpoints(
            store: store, apps: apps, settings: configuration.webhooks, clock: clock, audit: audit)
        WebhookController(store: store, endpoints: webhooks).addRoutes(to: adminScope)
        let apiKeys = APIKeys(store: store, apps: apps, verifier: keys, clock: clock, audit: audit)
        AccessController(store: store, keys: keys, apps: apps, apiKeys: apiKeys, clock: clock).addRoutes(to: router)
        OperationsController(store: store, metricsEndpoint: metricsEndpoint, servesMetrics: servesMetrics)
            .addRoutes(to: router)
        let senders = senders
        let checks = checks
        let appIDs = configuration.apps.map(\.bundleID)
        ConsoleController(
            store: store, keys: keys, authority: access.console, renderer: renderer, appIDs: appIDs, clock: clock,
            overviewPages: ConsoleOverviewPages(
                store: store, renderer: renderer, appIDs: appIDs, emulator: emulator,
                apnsStatistics: { senders.statistics }, clock: clock, deviceFigures: deviceFigures,
                deploymentChecks: { checks.report }),
            sendPages: ConsoleSendPages(
                store: store, renderer: renderer, appIDs: appIDs, engine: engine, apps: apps, clock: clock, audit: audit),
            devicePages: ConsoleDevicePages(
                store: store, renderer: renderer, appIDs: appIDs, apps: apps, emulator: emulator, clock: clock,
                audit: audit, preferences: preferences),
            activityPages: ConsoleActivityPages(
                store: store, renderer: renderer, appIDs: appIDs, activities: activities, channels: channels,
                clock: clock),
            keyPages: ConsoleKeyPages(store: store, renderer: renderer, appIDs: appIDs, apiKeys: apiKeys, clock: clock),
            auditPage: ConsoleAuditPage(store: store, renderer: renderer, appIDs: appIDs),
            webhookPages: ConsoleWebhookPages(store: store, renderer: renderer, appIDs: appIDs, webhooks: webhooks),
            audit: audit
        ).addRoutes(to: router)
    }
}
