import Foundation
import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Logging
import ServiceLifecycle

/// The APNs clients of a deployment: one per app and environment, sharing one provider-token cache per signing key.
///
/// Built from the configuration by ``make(configuration:emulator:dependencies:)``: Apple's hosts, an in-process
/// emulator, or a custom host. The clients are services; the server's service group runs them.
final class APNSSenders: PushSender {
    /// Clients by bundle id, then environment.
    private let clients: [String: [APNSEnvironment: APNSClient]]
    /// One cache per signing key, for sharing provider tokens through the store.
    let tokenCaches: [ProviderTokenCache]
    /// Where `webpush` devices are sent: their push services.
    let webPush: WebPushSenders

    private init(
        clients: [String: [APNSEnvironment: APNSClient]], tokenCaches: [ProviderTokenCache], webPush: WebPushSenders
    ) {
        self.clients = clients
        self.tokenCaches = tokenCaches
        self.webPush = webPush
    }

    /// Every client, to run as services, named by app and environment, and the Web Push client.
    var namedServices: [(name: String, service: any Service)] {
        clients.sorted { $0.key < $1.key }.flatMap { app, perEnvironment in
            APNSEnvironment.all.compactMap { environment in
                perEnvironment[environment].map { (name: "APNs client \(app) (\(environment))", service: $0 as any Service) }
            }
        } + [(name: "Web Push client", service: webPush.client)]
    }

    /// Each client's latency over the last 24 hours and open connections, by app and then environment.
    var statistics: [SenderStatistics] {
        clients.sorted { $0.key < $1.key }.flatMap { app, perEnvironment in
            APNSEnvironment.all.compactMap { environment in
                perEnvironment[environment].map { client in
                    SenderStatistics(
                        app: app, environment: environment, openConnections: client.statistics.openConnections,
                        latency: client.statistics.latency())
                }
            }
        }
    }

    func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment) async
        -> PushResult
    {
        guard let client = client(for: notification, in: environment) else {
            let bundleID = notification.pushType.bundleID(fromTopic: notification.topic) ?? notification.topic
            return PushResult(.failed(message: "No APNs client is configured for \(bundleID) in \(environment)."))
        }
        return Self.pushed(await client.send(notification, to: token), in: environment)
    }

    func start(
        _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
        cancellation: APNSCancellation, answered: @escaping @Sendable (APNSStarted<PushResult>) -> Void
    ) -> Bool {
        guard let client = client(for: notification, in: environment) else { return false }
        return client.startSending(notification, to: token, cancellation: cancellation) {
            answered($0.map { Self.pushed($0, in: environment) })
        }
    }

    func send(_ notification: PreparedNotification, to subscription: WebPushSubscription, language: String?) async
        -> PushResult
    {
        await webPush.send(notification, to: subscription, language: language)
    }

    /// The client of an app in an environment: for broadcast channels, which name the bare bundle id.
    func client(bundleID: String, environment: APNSEnvironment) -> APNSClient? { clients[bundleID]?[environment] }

    /// The client of the notification's app (its topic without the push type's suffix) in an environment.
    private func client(for notification: PreparedNotification, in environment: APNSEnvironment) -> APNSClient? {
        clients[notification.pushType.bundleID(fromTopic: notification.topic) ?? notification.topic]?[environment]
    }

    /// How the server records what the sender says, with the delivery trace's part of it.
    private static func pushed(_ delivery: APNSDelivery, in environment: APNSEnvironment) -> PushResult {
        let uniqueID: String?
        switch delivery.outcome {
        case .accepted(_, let id): uniqueID = id
        case .rejected(let rejection): uniqueID = rejection.uniqueID
        case .failed(let error): uniqueID = error.rejection?.uniqueID
        }
        let attempts = delivery.trail.map { DeliveryAttempt($0, in: environment) }
        if case .failed(let error) = delivery.outcome, error.code == .cancelled {
            return .cancelled(error.message, attempts: attempts)
        }
        return PushResult(result(of: delivery), apnsUniqueID: uniqueID, attempts: attempts)
    }

    private static func result(of delivery: APNSDelivery) -> DeliveryOutcome.Result {
        switch delivery.outcome {
        case .accepted(let apnsID, _):
            return .accepted(apnsID: APNSID(headerValue: apnsID) ?? APNSID())
        case .rejected(let rejection) where rejection.reason.retry == .withBackoff || rejection.reason.retry == .onAnotherConnection:
            // The sender retries these; one that still ends so ran out of attempts: APNs never took the
            // notification, so it failed (docs/server.md), it was not refused.
            return .failed(
                message:
                    "APNs answered \(rejection.status) \(rejection.reason) to all \(delivery.attempts) attempts; the notification was not delivered: send it again later."
            )
        case .rejected(let rejection):
            return .rejected(status: rejection.status, reason: rejection.reason, timestamp: rejection.timestamp)
        case .failed(let error):
            return .failed(message: error.message)
        }
    }

    /// The emulator key that signs for apps without credentials when pushes go to the in-process emulator.
    static let emulatorKeyID = "EMULATOR01"
    static let emulatorTeamID = "EMULATORTM"

    /// Makes the clients.
    /// - Parameters:
    ///   - destinations: Where each environment's host is, and which CA to trust.
    ///   - emulatorKey: The key that signs for apps without credentials (emulator mode only).
    /// - Throws: ``ConfigurationError`` when an app lacks credentials outside emulator mode, or a client cannot be
    ///   set up (unreadable certificate).
    static func make(
        apps: [AppConfiguration], destinations: Destinations, emulatorKey: ProviderSigningKey?,
        sending: ServerConfiguration.Sending, backoffClock: any Clock<Duration>, wallClock: any WallClock,
        logger: Logger
    ) throws(ConfigurationError) -> APNSSenders {
        var caches: [String: ProviderTokenCache] = [:]
        func cache(for key: ProviderSigningKey) -> ProviderTokenCache {
            let id = key.keyID + "." + key.teamID
            if let existing = caches[id] { return existing }
            let created = ProviderTokenCache(key: key)
            caches[id] = created
            return created
        }
        var clients: [String: [APNSEnvironment: APNSClient]] = [:]
        for app in apps {
            let credentials: APNSCredentials
            switch (app.credentials?.kind, emulatorKey) {
            case (.key(let key)?, _):
                credentials = .token(cache(for: key))
            case (_, let emulatorKey?):
                // The in-process emulator trusts keys, not client certificates: it signs for such apps itself.
                credentials = .token(cache(for: emulatorKey))
            case (.certificate(let chain, let privateKey)?, nil):
                credentials = .certificate(chainPEM: chain, privateKeyPEM: privateKey)
            case (.pkcs12(let data, let passphrase)?, nil):
                credentials = .pkcs12(data, passphrase: passphrase)
            case (nil, nil):
                throw ConfigurationError(
                    "The app \(app.bundleID) has no APNs credentials: set HERALD_KEY_FILE, HERALD_KEY_ID and HERALD_TEAM_ID (or a certificate), or send to the emulator with HERALD_APNS=emulator."
                )
            }
            var perEnvironment: [APNSEnvironment: APNSClient] = [:]
            for environment in APNSEnvironment.all {
                let configuration = APNSClientConfiguration(
                    destination: destinations.destination(environment), credentials: credentials,
                    trust: destinations.trust,
                    maximumConnections: sending.connectionsPerClient, retry: sending.retry,
                    broadcastDestination: destinations.broadcast(environment),
                    channelManagementDestination: destinations.channelManagement(environment))
                do {
                    perEnvironment[environment] = try APNSClient(configuration: configuration, clock: backoffClock)
                } catch {
                    throw ConfigurationError(
                        "The APNs client of \(app.bundleID) (\(environment)) cannot start: \(error.message)")
                }
            }
            clients[app.bundleID] = perEnvironment
        }
        let webPush = WebPushClient(
            configuration: WebPushClient.Configuration(
                hosts: destinations.webPushHosts, trust: destinations.webPushTrust,
                connectionsPerService: sending.connectionsPerClient, retry: sending.retry),
            wallClock: wallClock, logger: logger)
        return APNSSenders(
            clients: clients, tokenCaches: Array(caches.values),
            webPush: WebPushSenders(client: webPush, apps: apps, clock: wallClock))
    }

    /// Where each environment's hosts are.
    struct Destinations {
        let destination: (APNSEnvironment) -> APNSClientConfiguration.Destination
        /// Where broadcasts go; `nil` is Apple's broadcast host.
        var broadcast: (APNSEnvironment) -> APNSClientConfiguration.Destination? = { _ in nil }
        /// Where channel-management requests go; `nil` is Apple's channel-management host.
        var channelManagement: (APNSEnvironment) -> APNSClientConfiguration.Destination? = { _ in nil }
        let trust: APNSClientConfiguration.Trust
        /// The push services subscriptions are sent to.
        var webPushHosts: PushServiceHosts = .default
        /// Whom the push services' connections trust.
        var webPushTrust: APNSClientConfiguration.Trust = .system
    }
}
