public import Foundation
import HeraldAPNS
public import HeraldCore
public import HeraldSending
public import HeraldStore
public import HeraldWebhooks

/// Everything `herald serve` needs: where to listen, which database, which apps and how to reach APNs, bootstrap API
/// keys, and limits.
///
/// Build it in code, or read it from environment variables and an optional JSON file with
/// ``init(environment:)`` (the keys are listed there and in the README). The defaults make a server that works on a
/// fresh machine: `127.0.0.1:8080`, SQLite in the working folder, one app `com.example.app`, and — since no APNs
/// credentials are configured — an in-process APNs emulator.
public struct ServerConfiguration: Sendable {
    /// Where the HTTP API listens. Default `127.0.0.1:8080`.
    public var listen: ListenAddress
    /// The database URL: `sqlite://herald.sqlite` (default, relative to the working folder),
    /// `sqlite:///abs/path.sqlite`, `sqlite::memory:` or `postgres://user:pass@host/db`.
    public var databaseURL: String
    /// The apps (topics) this deployment serves, with their credentials. Default: one app, `com.example.app`,
    /// without credentials.
    public var apps: [AppConfiguration]
    /// Where pushes go: Apple, an in-process emulator, or another host. Default ``APNSMode/automatic``.
    public var apns: APNSMode
    /// API keys to make sure exist at start (for automated deployments); most deployments use `herald keys create`.
    public var apiKeys: [BootstrapAPIKey]
    /// Body sizes, rate limits, the inline send threshold.
    public var limits: Limits
    /// How sends run: batch size, concurrency, connections, retries, leases.
    public var sending: Sending
    /// The web console's sessions and sign-in.
    public var console = Console()
    /// How long records are kept before the retention service deletes them.
    public var retention = Retention()
    /// How this instance delivers webhooks (docs/integrations.md).
    public var webhooks = WebhookSettings()
    /// Live Activity update budgets.
    public var liveActivities = LiveActivities()
    /// Where `/metrics` is served and whether it asks for a key.
    public var metrics = Metrics()
    /// The push services a Web Push subscription's endpoint may name (docs/web-push.md): Apple's, Google's,
    /// Mozilla's and Microsoft's unless configured.
    public var webPushHosts: PushServiceHosts = .default
    /// What names this server among the instances that share a database, stable across restarts: the background
    /// worker's sends are held under it, so a restarted instance resumes its own at once (docs/reliability.md).
    /// 1–64 bytes without `/` or white space. Default the host name; give each of several instances on one host
    /// its own.
    public var instanceID: String

    /// - Parameters: see the properties; every one has a default.
    public init(
        listen: ListenAddress = ListenAddress(), databaseURL: String = "sqlite://herald.sqlite",
        apps: [AppConfiguration] = [AppConfiguration(bundleID: AppConfiguration.defaultBundleID)],
        apns: APNSMode = .automatic, apiKeys: [BootstrapAPIKey] = [], limits: Limits = Limits(),
        sending: Sending = Sending(), instanceID: String = ServerConfiguration.defaultInstanceID
    ) {
        self.listen = listen
        self.databaseURL = databaseURL
        self.apps = apps
        self.apns = apns
        self.apiKeys = apiKeys
        self.limits = limits
        self.sending = sending
        self.instanceID = instanceID
    }

    /// The host name, made into an instance id (`/` and white space become `-`, at most 64 bytes); `herald` when the
    /// host has no name.
    public static var defaultInstanceID: String {
        let name = String(
            String.UnicodeScalarView(
                ProcessInfo.processInfo.hostName.unicodeScalars.map {
                    $0 == "/" || $0.properties.isWhitespace || $0.properties.generalCategory == .control ? "-" : $0
                }))
        var id = ""
        for character in name where id.utf8.count + character.utf8.count <= 64 { id.append(character) }
        return id.isEmpty ? "herald" : id
    }

    /// The web console's sessions and sign-in (docs/console.md).
    public struct Console: Sendable, Hashable {
        /// How long a session may go unused before it ends: 30 minutes by default.
        public var idleTimeout: Duration
        /// Sign-in attempts a minute per client address (passwords and one-time links alike): 10 by default.
        public var signInAttemptsPerMinute: Int
        /// How long the one-time sign-in link printed at start works, if unused: an hour by default.
        public var signInLinkLifetime: Duration

        /// - Parameters: see the properties.
        public init(
            idleTimeout: Duration = .seconds(1800), signInAttemptsPerMinute: Int = 10,
            signInLinkLifetime: Duration = .seconds(3600)
        ) {
            self.idleTimeout = idleTimeout
            self.signInAttemptsPerMinute = signInAttemptsPerMinute
            self.signInLinkLifetime = signInLinkLifetime
        }
    }

    /// How long Herald keeps what would otherwise grow without end, and how the retention service deletes the rest
    /// (docs/storage.md, "Retention"). An age of `nil` keeps those records forever.
    public struct Retention: Sendable, Hashable {
        /// Per-device outcomes of a send, counted from the time the send finished: 30 days by default. The send keeps
        /// its counts. At most ``sends`` when that is set: a send's row goes only after its outcomes.
        public var outcomes: Duration?
        /// Delivery receipt events of a send (one per device and kind, kept so a repeated report counts once), counted
        /// from the time the send finished: 30 days by default. The send keeps its receipt counts and rates; later
        /// reports about it are not counted.
        public var receiptEvents: Duration?
        /// Finished sends (completed, failed, cancelled), counted from the time they finished: 90 days by default.
        /// Their outcomes, receipt events, shards and receipt counts go with them. Queued and running sends are never
        /// deleted.
        public var sends: Duration?
        /// Console sessions, counted from their last use, and expired one-time sign-in links: 7 days by default. At
        /// least the console's idle timeout.
        public var consoleSessions: Duration?
        /// Tokens taken out of sends after APNs's answer (invalidated), counted from then: 30 days by default. Until
        /// then the device page shows why; a token the app registers again is active and never deleted.
        public var invalidatedTokens: Duration?
        /// Audit log entries, counted from the change: 365 days by default.
        public var auditLog: Duration?
        /// How long the service waits between runs: an hour by default. Each run deletes everything due.
        public var interval: Duration
        /// Delivered webhook events and the record of deliveries, counted from their delivery: 7 days by default.
        /// Events not delivered yet, and the dead letter, are never deleted.
        public var webhookDeliveries: Duration? = .seconds(7 * 86_400)
        /// Rows deleted per transaction: 100 by default. Smaller batches hold the database for less time each.
        public var batchSize: Int
        /// How long the service waits after a full batch before the next: 10 ms by default, so that writes queued
        /// behind a batch (registrations, outcomes) find the database free again. `.zero` goes on at once.
        public var batchPause: Duration

        /// - Parameters: see the properties; each has its default.
        public init(
            outcomes: Duration? = .seconds(30 * 86_400), receiptEvents: Duration? = .seconds(30 * 86_400),
            sends: Duration? = .seconds(90 * 86_400), consoleSessions: Duration? = .seconds(7 * 86_400),
            invalidatedTokens: Duration? = .seconds(30 * 86_400), auditLog: Duration? = .seconds(365 * 86_400),
            interval: Duration = .seconds(3600),
            batchSize: Int = 100, batchPause: Duration = .milliseconds(10)
        ) {
            self.outcomes = outcomes
            self.receiptEvents = receiptEvents
            self.sends = sends
            self.consoleSessions = consoleSessions
            self.invalidatedTokens = invalidatedTokens
            self.auditLog = auditLog
            self.interval = interval
            self.batchSize = batchSize
            self.batchPause = batchPause
        }

        /// The age of each kind, as the service applies it: outcomes and receipt events no older than their sends.
        public var ages: [(kind: RetentionKind, age: Duration)] {
            func atMost(_ age: Duration?, _ limit: Duration?) -> Duration? {
                guard let age else { return limit }
                return limit.map { min(age, $0) } ?? age
            }
            let ages: [(RetentionKind, Duration?)] = [
                (.outcomes, atMost(outcomes, sends)), (.receiptEvents, atMost(receiptEvents, sends)), (.sends, sends),
                (.consoleSessions, consoleSessions), (.invalidatedTokens, invalidatedTokens), (.auditLog, auditLog),
            ]
            return ages.compactMap { kind, age in age.map { (kind, $0) } }
        }

        /// How long a period of send records lasts on PostgreSQL (``HeraldStore/RetentionStore/rollSendRecordPeriod(every:)``):
        /// an eighth of the outcomes' age, between an hour and a day — a day for the default 30 days. Outcomes are kept
        /// for their age and at most a period more, and about 8 to 30 periods' partitions exist at a time. `nil` when
        /// outcomes are kept forever: one period then.
        public var sendRecordPeriod: Duration? {
            guard let age = ages.first(where: { $0.kind == .outcomes })?.age else { return nil }
            return min(.seconds(86_400), max(.seconds(3_600), age / 8))
        }
    }

    /// A host and port to listen on.
    public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
        /// The address to bind: `127.0.0.1` by default (loopback only).
        public var host: String
        /// 0 picks a free port (tests).
        public var port: Int

        /// - Parameters: see the properties.
        public init(host: String = "127.0.0.1", port: Int = 8080) {
            self.host = host
            self.port = port
        }

        /// Parses `host:port`, `:port` or `port`.
        public init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            switch parts.count {
            case 1:
                guard let port = Int(parts[0]), (0...65535).contains(port) else { return nil }
                self.init(port: port)
            case 2:
                guard let port = Int(parts[1]), (0...65535).contains(port) else { return nil }
                self.init(host: parts[0].isEmpty ? "127.0.0.1" : String(parts[0]), port: port)
            default:
                return nil
            }
        }

        public var description: String { "\(host):\(port)" }
    }

    /// Body sizes, rate limits and when a send runs in the background.
    public struct Limits: Sendable, Hashable {
        /// The largest `POST /api/token` body: 16 KiB, fixed by docs/api-registration.md.
        public static let registrationBodyBytes = RegistrationRules.maximumBodyBytes
        /// The largest `POST /api/send` body. Default 1 MiB.
        public var sendBodyBytes: Int
        /// Registration requests per minute per client address (`POST`/`DELETE /api/token`); 0 turns the limit off.
        /// Default 600, with bursts up to that many.
        public var registrationsPerMinute: Int
        /// Sends to at most this many devices are performed while the request waits and answer with every outcome;
        /// larger ones answer `202` and run in the background. Default 100.
        public var inlineSendLimit: Int

        /// How long a connection may stay open without a request: idle between keep-alive requests, or sending a
        /// request's head too slowly. Default 30 seconds.
        public var idleTimeout: Duration
        /// How long a request may take to arrive whole, from its head to the end of its body; a slower one is
        /// answered `408` and closed. Default 30 seconds.
        public var requestTimeout: Duration
        /// Connections open at once; further ones wait in the listen backlog until one closes. Keep it below the
        /// process's file limit (`ulimit -n`). Default 4,096.
        public var maximumConnections: Int
        /// At shutdown, how long a connection still sending or awaiting its answer is given before it is closed.
        /// Default 10 seconds.
        public var shutdownGracePeriod: Duration
        /// How long the answer of a request with an `Idempotency-Key` is kept for its retries. Default 24 hours.
        public var idempotencyWindow: Duration

        /// - Parameters: see the properties; each has its default.
        public init(
            sendBodyBytes: Int = 1024 * 1024, registrationsPerMinute: Int = 600, inlineSendLimit: Int = 100,
            idleTimeout: Duration = .seconds(30), requestTimeout: Duration = .seconds(30),
            maximumConnections: Int = 4096, shutdownGracePeriod: Duration = .seconds(10),
            idempotencyWindow: Duration = .seconds(86_400)
        ) {
            self.idempotencyWindow = idempotencyWindow
            self.sendBodyBytes = sendBodyBytes
            self.registrationsPerMinute = registrationsPerMinute
            self.inlineSendLimit = inlineSendLimit
            self.idleTimeout = idleTimeout
            self.requestTimeout = requestTimeout
            self.maximumConnections = maximumConnections
            self.shutdownGracePeriod = shutdownGracePeriod
        }
    }

    /// How the send engine runs: pages, in-flight budget, lanes, shards, leases (``HeraldSending/SendingSettings``).
    public typealias Sending = SendingSettings

    /// An API key that must exist when the server starts. Its secret is stored only as a hash.
    public struct BootstrapAPIKey: Sendable, Hashable, CustomStringConvertible {
        /// The key's name, for people.
        public var name: String
        /// What the key may do.
        public var scopes: Set<APIKeyScope>
        /// The secret clients present as `Authorization: Bearer <secret>`.
        public var secret: String

        /// - Parameters: see the properties.
        public init(name: String, scopes: Set<APIKeyScope>, secret: String) {
            self.name = name
            self.scopes = scopes
            self.secret = secret
        }

        /// Never the secret.
        public var description: String {
            "BootstrapAPIKey(\(name), \(scopes.sorted().map(\.rawValue).joined(separator: "+")))"
        }
    }
}

/// One app (topic) the deployment serves.
public struct AppConfiguration: Sendable {
    /// The bundle id used when nothing is configured.
    public static let defaultBundleID = "com.example.app"

    /// The app's bundle id: the registration's `topic`, and the `apns-topic` before any push-type suffix.
    public var bundleID: String
    /// How Herald authenticates to APNs for this app; `nil` means none configured (the emulator signs for it).
    public var credentials: Credentials?
    /// Keys the app ships with and sends as `X-Herald-Registration-Key`; empty means registration is open unless
    /// another app has keys.
    public var registrationKeys: [String]
    /// The app's key for end-to-end encrypted alert text (`"encrypt": true` in a send).
    public var contentKey: ContentEncryptionKey?
    /// Whether alert and background notifications carry the send id in a `herald` key, so the app's SDK can report
    /// them received and opened (delivery receipts, `POST /api/events`). On by default; the key costs about 50 bytes
    /// of the payload limit.
    public var receipts: Bool
    /// The app's weight in each instance's shared in-flight budget: while two apps' sends of one lane both want
    /// more, they get it in proportion to their weights. Default 1.
    public var sendWeight: Int
    /// How the app's sends rank against other apps' sends of the same lane: claimed from the queue and given the
    /// in-flight budget before (`high`) or after (`low`) them. Default `normal` (docs/sending.md, "Priorities").
    public var sendPriority: AppPriority = .normal
    /// The kinds of notification the app sends, which people may turn off unless mandatory (docs/preferences.md).
    /// Empty: no preferences; every send reaches every device it targets.
    public var preferenceCategories: [PreferenceCategory]
    /// The category of a send that names none; `nil`: such sends are not subject to preferences.
    public var defaultPreferenceCategory: String?
    /// At most so many non-mandatory alerts per person and period, app-wide or per category (docs/preferences.md).
    /// Empty: no caps.
    public var frequencyCaps: [FrequencyCap] = []
    /// The app's default quiet hours, in each device's time zone (docs/preferences.md); `nil`: none.
    public var quietHours: QuietHours?
    /// The time zone quiet hours are judged in for devices that registered none. UTC unless configured.
    public var quietHoursTimeZone: TimeZone = TimeZone(identifier: "UTC")!
    /// The app's website, reached through Web Push (docs/web-push.md); `nil`: the app takes no web subscriptions.
    public var webPush: WebPush?

    /// - Parameters: see the properties; only the bundle id is required.
    public init(
        bundleID: String, credentials: Credentials? = nil, registrationKeys: [String] = [],
        contentKey: ContentEncryptionKey? = nil, receipts: Bool = true, sendWeight: Int = 1,
        preferenceCategories: [PreferenceCategory] = [], defaultPreferenceCategory: String? = nil
    ) {
        self.sendWeight = sendWeight
        self.preferenceCategories = preferenceCategories
        self.defaultPreferenceCategory = defaultPreferenceCategory
        self.bundleID = bundleID
        self.credentials = credentials
        self.registrationKeys = registrationKeys
        self.contentKey = contentKey
        self.receipts = receipts
    }

    /// APNs credentials: a `.p8` signing key (JWT) or a TLS client certificate.
    public struct Credentials: Sendable, CustomStringConvertible {
        enum Kind: Sendable {
            case key(ProviderSigningKey)
            case certificate(chainPEM: String, privateKeyPEM: String)
            case pkcs12(data: [UInt8], passphrase: String?)
        }

        let kind: Kind
        /// The file the key or certificate was read from, for `herald doctor` (Apple names a key's file after it).
        var file: String?

        /// Token authentication with a `.p8` key; one provider token is shared by every app that uses the key.
        public static func key(_ key: ProviderSigningKey) -> Credentials { Credentials(kind: .key(key)) }

        /// Certificate authentication from PEM text.
        public static func certificate(chainPEM: String, privateKeyPEM: String) -> Credentials {
            Credentials(kind: .certificate(chainPEM: chainPEM, privateKeyPEM: privateKeyPEM))
        }

        /// Certificate authentication from a `.p12` file's bytes.
        public static func pkcs12(_ data: [UInt8], passphrase: String?) -> Credentials {
            Credentials(kind: .pkcs12(data: data, passphrase: passphrase))
        }

        /// The signing key, for token authentication.
        public var signingKey: ProviderSigningKey? {
            if case .key(let key) = kind { key } else { nil }
        }

        /// Never key material.
        public var description: String {
            switch kind {
            case .key(let key): "key \(key.keyID) (team \(key.teamID))"
            case .certificate: "certificate"
            case .pkcs12: "certificate (.p12)"
            }
        }
    }
}

/// Where the server sends pushes.
public struct APNSMode: Sendable {
    enum Kind: Sendable {
        case automatic(EmulatorSettings)
        case apple
        case emulator(EmulatorSettings)
        case custom(CustomHost)
    }

    let kind: Kind

    /// Apple's hosts when every app has credentials, the in-process emulator when none has.
    public static let automatic = APNSMode(kind: .automatic(EmulatorSettings()))
    /// Apple's hosts when every app has credentials, else an in-process emulator with these settings.
    public static func automatic(emulator settings: EmulatorSettings) -> APNSMode {
        APNSMode(kind: .automatic(settings))
    }
    /// Apple's production and sandbox hosts.
    public static let apple = APNSMode(kind: .apple)
    /// An APNs emulator inside the server process: nothing reaches Apple, inboxes show what arrived.
    public static func emulator(_ settings: EmulatorSettings = EmulatorSettings()) -> APNSMode {
        APNSMode(kind: .emulator(settings))
    }
    /// Another APNs-compatible host, such as `herald emulator` in its own process, with broadcasts and channel
    /// management on `herald emulator`'s default ports.
    /// - Parameter trustPEM: CA certificates to trust besides the system's (the emulator's CA file).
    public static func custom(host: String, productionPort: Int, developmentPort: Int, trustPEM: String? = nil)
        -> APNSMode
    {
        APNSMode(
            kind: .custom(
                CustomHost(
                    host: host, productionPort: productionPort, developmentPort: developmentPort, trustPEM: trustPEM)))
    }

    /// Another APNs-compatible host with every port given.
    public static func custom(_ host: CustomHost) -> APNSMode { APNSMode(kind: .custom(host)) }

    /// Where a custom APNs listens: one host, a port per environment for device pushes, for broadcasts and for
    /// channel management (Apple uses other hosts for the last two; `herald emulator` other ports).
    public struct CustomHost: Sendable, Hashable {
        public var host: String
        public var productionPort: Int
        public var developmentPort: Int
        /// Stands in for `api-broadcast.push.apple.com:443`. Default 7445, `herald emulator`'s.
        public var broadcastProductionPort: Int
        /// Stands in for `api-broadcast.sandbox.push.apple.com:443`. Default 7446.
        public var broadcastDevelopmentPort: Int
        /// Stands in for `api-manage-broadcast.push.apple.com:2196`. Default 7496.
        public var channelsProductionPort: Int
        /// Stands in for `api-manage-broadcast.sandbox.push.apple.com:2195`. Default 7495.
        public var channelsDevelopmentPort: Int
        /// CA certificates to trust besides the system's (the emulator's CA file).
        public var trustPEM: String?

        /// - Parameters: see the properties.
        public init(
            host: String, productionPort: Int, developmentPort: Int, broadcastProductionPort: Int = 7445,
            broadcastDevelopmentPort: Int = 7446, channelsProductionPort: Int = 7496,
            channelsDevelopmentPort: Int = 7495, trustPEM: String? = nil
        ) {
            self.host = host
            self.productionPort = productionPort
            self.developmentPort = developmentPort
            self.broadcastProductionPort = broadcastProductionPort
            self.broadcastDevelopmentPort = broadcastDevelopmentPort
            self.channelsProductionPort = channelsProductionPort
            self.channelsDevelopmentPort = channelsDevelopmentPort
            self.trustPEM = trustPEM
        }
    }

    /// How the in-process emulator listens.
    public struct EmulatorSettings: Sendable, Hashable {
        /// The admin API's port (inboxes, devices, faults: docs/emulator.md); `nil` turns it off, 0 picks one.
        /// Default 7480.
        public var adminPort: Int?
        /// Where to write the emulator's CA certificate, for clients that talk to it directly; `nil` writes none.
        public var caFile: String?
        /// Keep counters only, no inboxes (benchmarks).
        public var countingOnly: Bool

        /// - Parameters: see the properties.
        public init(adminPort: Int? = 7480, caFile: String? = nil, countingOnly: Bool = false) {
            self.adminPort = adminPort
            self.caFile = caFile
            self.countingOnly = countingOnly
        }
    }
}
