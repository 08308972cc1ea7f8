import Foundation
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore
import HeraldWebhooks

/// A configuration value that cannot be used, with what to do about it.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it; never contains a secret.
    public let message: String

    /// - Parameter message: What is wrong and how to fix it; never a secret.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

extension ServerConfiguration {
    /// Reads the configuration from environment variables, and from a JSON file when `HERALD_CONFIG` names one.
    ///
    /// The file holds the same settings under the JSON keys in brackets; a variable that is set wins over the file.
    ///
    /// | variable [file key] | type | default |
    /// |---|---|---|
    /// | `HERALD_CONFIG` | path of a JSON file | none |
    /// | `HERALD_LISTEN` [`listen`] | `host:port` | `127.0.0.1:8080` |
    /// | `HERALD_DATABASE_URL` [`databaseURL`] | `sqlite://…`, `sqlite:///…`, `postgres://…` | `sqlite://herald.sqlite` |
    /// | `HERALD_APNS` [`apns`] | `auto`, `apple`, `emulator`, `custom` | `auto`: Apple when every app has credentials, else the emulator |
    /// | `HERALD_APNS_HOST`, `HERALD_APNS_PRODUCTION_PORT`, `HERALD_APNS_DEVELOPMENT_PORT`, `HERALD_APNS_CA_FILE` [`apnsHost`, …, `apnsCAFile`] | for `custom` | `127.0.0.1`, 7443, 7444, none |
    /// | `HERALD_APNS_BROADCAST_PRODUCTION_PORT`, `…_DEVELOPMENT_PORT`, `HERALD_APNS_CHANNELS_PRODUCTION_PORT`, `…_DEVELOPMENT_PORT` [`apnsBroadcastProductionPort`, …] | for `custom`: broadcasts and channel management on the same host | 7445, 7446, 7496, 7495 (`herald emulator`'s) |
    /// | `HERALD_EMULATOR_ADMIN_PORT` [`emulatorAdminPort`] | port, or `off` | 7480 |
    /// | `HERALD_EMULATOR_CA_FILE` [`emulatorCAFile`] | path | `herald-emulator-ca.pem` |
    /// | `HERALD_EMULATOR_COUNTING` [`emulatorCounting`] | Boolean | `false` |
    /// | `HERALD_TOPIC` [`apps[].topic`] | bundle id of the app the variables below describe | `com.example.app` |
    /// | `HERALD_TEAM_ID`, `HERALD_KEY_ID`, `HERALD_KEY_FILE` [`teamId`, `keyId`, `keyFile`] | `.p8` token auth | none |
    /// | `HERALD_CERTIFICATE_FILE`, `HERALD_PRIVATE_KEY_FILE` [`certificateFile`, `privateKeyFile`] | PEM certificate auth | none |
    /// | `HERALD_P12_FILE`, `HERALD_P12_PASSWORD` [`p12File`, `p12Password`] | `.p12` certificate auth | none |
    /// | `HERALD_REGISTRATION_KEYS` [`registrationKeys`] | comma-separated | none: registration is open |
    /// | `HERALD_CONTENT_KEY` [`contentKey`] | `id:base64` of 32 bytes | none |
    /// | `HERALD_VAPID_PRIVATE_KEY` or `HERALD_VAPID_KEY_FILE` [`vapidPrivateKey`, `vapidKeyFile`] | the app's website's VAPID key (`herald vapid generate`), base64url or PEM | none: no web subscriptions |
    /// | `HERALD_VAPID_SUBJECT` [`vapidSubject`] | with a VAPID key: `mailto:` or `https:` URL push services can reach you at | none |
    /// | `HERALD_WEB_ORIGIN` [`webOrigin`] | the website's origin, `https://example.com`: pages that may register from a browser, and where a notification opens by default | none |
    /// | `HERALD_WEB_PUSH_FORMAT` [`webPushFormat`] | `declarative` (Safari shows it without a service worker) or `classic` (every browser hands it to the site's service worker) | `declarative` |
    /// | `HERALD_RECEIPTS` [`receipts`] | Boolean: the send id in a `herald` key, for delivery receipts | `true` |
    /// | `HERALD_SEND_WEIGHT` [`sendWeight`] | the app's share of the in-flight budget against other apps, 1–1000 | 1 |
    /// | `HERALD_SEND_PRIORITY` [`sendPriority`] | `high`, `normal` or `low`: the app's sends are claimed and given the budget before (after) other apps' of their lane | `normal` |
    /// | `HERALD_PREFERENCE_CATEGORIES` [`preferenceCategories`] | comma-separated `name`, `name:off` or `name:mandatory` | none: no preferences |
    /// | `HERALD_DEFAULT_PREFERENCE_CATEGORY` [`defaultPreferenceCategory`] | the category of a send that names none | none: such sends ignore preferences |
    /// | `HERALD_FREQUENCY_CAPS` [`frequencyCaps`] | comma-separated `[category:]count/period`, such as `marketing:3/day,*:10/1d` | none: no caps |
    /// | `HERALD_QUIET_HOURS` [`quietHours`] | the app's quiet hours in each device's time zone, `HH:MM-HH:MM` | none |
    /// | `HERALD_QUIET_HOURS_TIME_ZONE` [`quietHoursTimeZone`] | IANA zone of quiet hours for devices that registered none | `UTC` |
    /// | `HERALD_API_KEYS` [`apiKeys`] | `name:scope+scope:secret`, comma-separated | none |
    /// | `HERALD_MAX_SEND_BODY_BYTES` [`maxSendBodyBytes`] | bytes | 1048576 |
    /// | `HERALD_RATE_LIMIT` [`rateLimit`] | registrations per minute per client, 0 = off | 600 |
    /// | `HERALD_INLINE_SEND_LIMIT` [`inlineSendLimit`] | devices | 100 |
    /// | `HERALD_IDEMPOTENCY_WINDOW` [`idempotencyWindow`] | seconds the answer of a request with an `Idempotency-Key` is kept for retries | 86400 |
    /// | `HERALD_IDLE_TIMEOUT` [`idleTimeout`] | seconds without a request before a connection is closed | 30 |
    /// | `HERALD_REQUEST_TIMEOUT` [`requestTimeout`] | seconds for a request to arrive whole | 30 |
    /// | `HERALD_MAX_CONNECTIONS` [`maxConnections`] | connections open at once | 4096 |
    /// | `HERALD_SHUTDOWN_GRACE` [`shutdownGrace`] | seconds a busy connection gets at shutdown | 10 |
    /// | `HERALD_SEND_SHUTDOWN_GRACE` [`sendShutdownGrace`] | seconds a shutdown waits for APNs's answers to what the running sends have in flight, before it cancels those requests | 5 |
    /// | `HERALD_SEND_CONCURRENCY` [`sendConcurrency`] | notifications in flight on this instance, shared by its sends | 1000 |
    /// | `HERALD_RUNNING_SENDS` [`runningSends`] | background sends running at once per lane | 16 |
    /// | `HERALD_CAMPAIGN_THRESHOLD` [`campaignThreshold`] | devices above which a send goes to the campaign lane | 10000 |
    /// | `HERALD_SHARD_SIZE` [`shardSize`] | devices per shard of a larger send, which any instance may run; 0 = never | 10000 |
    /// | `HERALD_APNS_CONNECTIONS` [`apnsConnections`] | connections per app and environment | 4 |
    /// | `HERALD_CONSOLE_IDLE_TIMEOUT` [`consoleIdleTimeout`] | seconds a console session may go unused | 1800 |
    /// | `HERALD_SCHEDULE_CATCH_UP` [`scheduleCatchUp`] | seconds late a scheduled send still goes out after downtime | 86400 |
    /// | `HERALD_RETRY_WINDOW` [`retryWindow`] | seconds a notification APNs asked to retry (429, 5xx) or never answered is retried, never past its `apns-expiration` | 600 |
    /// | `HERALD_INSTANCE_ID` [`instanceId`] | this server's name among instances sharing a database, stable across restarts; no `/` | the host name |
    /// | `HERALD_RETENTION_OUTCOMES_DAYS` [`retentionOutcomesDays`] | days a finished send's per-device outcomes are kept, 0 = forever | 30 |
    /// | `HERALD_RETENTION_RECEIPTS_DAYS` [`retentionReceiptsDays`] | days a finished send's receipt events are kept, 0 = forever | 30 |
    /// | `HERALD_RETENTION_SENDS_DAYS` [`retentionSendsDays`] | days a finished send is kept (its counts, then the row), 0 = forever | 90 |
    /// | `HERALD_RETENTION_CONSOLE_SESSIONS_DAYS` [`retentionConsoleSessionsDays`] | days an unused console session is kept, 0 = forever | 7 |
    /// | `HERALD_RETENTION_INVALIDATED_TOKENS_DAYS` [`retentionInvalidatedTokensDays`] | days an invalidated token is kept, 0 = forever | 30 |
    /// | `HERALD_RETENTION_AUDIT_DAYS` [`retentionAuditDays`] | days an audit log entry is kept, 0 = forever | 365 |
    /// | `HERALD_RETENTION_INTERVAL` [`retentionInterval`] | seconds between retention runs | 3600 |
    /// | `HERALD_RETENTION_BATCH` [`retentionBatch`] | rows deleted per transaction | 100 |
    /// | `HERALD_RETENTION_WEBHOOKS_DAYS` [`retentionWebhooksDays`] | days delivered webhook events and deliveries are kept, 0 = forever | 7 |
    /// | `HERALD_WEBHOOKS` [`webhooks`] | Boolean: this instance delivers webhooks | `true` |
    /// | `HERALD_WEBHOOK_CONCURRENCY`, `HERALD_WEBHOOK_BATCH`, `HERALD_WEBHOOK_POLL_INTERVAL_MS`, `HERALD_WEBHOOK_TIMEOUT` [`webhookConcurrency`, …] | endpoints at once, events per POST, ms between looks, seconds per POST | 4, 100, 1000, 10 |
    /// | `HERALD_WEBHOOK_PAUSE_AFTER_FAILURES`, `HERALD_WEBHOOK_PAUSE_AFTER` [`webhookPauseAfterFailures`, `webhookPauseAfter`] | failures in a row, and seconds failing, before an endpoint is paused | 10, 3600 |
    /// | `HERALD_WEBHOOK_SECRET_OVERLAP` [`webhookSecretOverlap`] | seconds a rotated-out secret still signs | 86400 |
    /// | `HERALD_LIVE_ACTIVITY_BUDGET` [`liveActivityBudget`] | priority-10 updates per Live Activity and hour before later ones go at priority 5, 0 = no budget | 12 |
    /// | `HERALD_PUSH_TO_START_RATE` [`pushToStartRate`] | push-to-start notifications per app and second, across instances, 0 = unpaced | 0 |
    /// | `HERALD_PUSH_TO_START_CHECK_AFTER` [`pushToStartCheckAfter`] | seconds after a Live Activity's start send ends before devices whose app registered no update token of it count as `notStarted`, 0 = no check | 3600 |
    /// | `HERALD_CHANNEL_TIDY` [`channelTidy`] | delete broadcast channels no running activity follows: whose activities all ended, or unused for `HERALD_CHANNEL_UNUSED_AFTER` | false |
    /// | `HERALD_CHANNEL_UNUSED_AFTER` [`channelUnusedAfter`] | seconds without a broadcast before the tidy deletes a channel | 604800 |
    /// | `HERALD_PUSH_TO_START_STALE_AFTER` [`pushToStartStaleAfter`] | push-to-starts in a row that started nothing before the token is stale (left out of sends until the app registers a new one), 0 = never | 3 |
    /// | `HERALD_WEB_PUSH_HOSTS` [`webPushHosts`] | comma-separated push-service hosts a subscription's endpoint may name: `host`, `*.domain`, `host:port` | Apple's, Google's, Mozilla's, Microsoft's |
    /// | `HERALD_METRICS_LISTEN` [`metricsListen`] | `host:port` of a listener for `/metrics` alone | none: the API's, on loopback only |
    /// | `HERALD_METRICS_KEY` [`metricsKey`] | bearer secret `/metrics` asks for, 32+ characters | none |
    ///
    /// The file's `apps` array describes several apps, each with the per-app keys above; `HERALD_TOPIC` and the
    /// per-app variables then add or replace the app of that topic.
    /// - Throws: ``ConfigurationError`` naming the variable and what to write instead.
    public init(environment: [String: String]) throws(ConfigurationError) {
        var file: [String: JSONValue] = [:]
        if let path = environment["HERALD_CONFIG"], !path.isEmpty {
            file = try Self.readFile(path)
        }
        let reader = SettingReader(environment: environment, file: file)
        self.init(listen: ListenAddress())

        if let text = try reader.string("HERALD_LISTEN", "listen") {
            guard let address = ListenAddress(text) else {
                throw ConfigurationError("HERALD_LISTEN is \"\(text)\": write host:port, such as 127.0.0.1:8080.")
            }
            listen = address
        }
        if let url = try reader.string("HERALD_DATABASE_URL", "databaseURL") { databaseURL = url }
        limits.sendBodyBytes =
            try reader.integer("HERALD_MAX_SEND_BODY_BYTES", "maxSendBodyBytes", in: 1024...(64 << 20))
            ?? limits.sendBodyBytes
        limits.registrationsPerMinute =
            try reader.integer("HERALD_RATE_LIMIT", "rateLimit", in: 0...10_000_000) ?? limits.registrationsPerMinute
        limits.inlineSendLimit =
            try reader.integer("HERALD_INLINE_SEND_LIMIT", "inlineSendLimit", in: 0...100_000) ?? limits.inlineSendLimit
        limits.idempotencyWindow =
            try reader.integer("HERALD_IDEMPOTENCY_WINDOW", "idempotencyWindow", in: 60...2_592_000).map { .seconds($0) }
            ?? limits.idempotencyWindow
        limits.idleTimeout =
            try reader.integer("HERALD_IDLE_TIMEOUT", "idleTimeout", in: 1...3600).map { .seconds($0) }
            ?? limits.idleTimeout
        limits.requestTimeout =
            try reader.integer("HERALD_REQUEST_TIMEOUT", "requestTimeout", in: 1...3600).map { .seconds($0) }
            ?? limits.requestTimeout
        limits.maximumConnections =
            try reader.integer("HERALD_MAX_CONNECTIONS", "maxConnections", in: 1...1_000_000)
            ?? limits.maximumConnections
        limits.shutdownGracePeriod =
            try reader.integer("HERALD_SHUTDOWN_GRACE", "shutdownGrace", in: 0...3600).map { .seconds($0) }
            ?? limits.shutdownGracePeriod
        sending.shutdownGrace =
            try reader.integer("HERALD_SEND_SHUTDOWN_GRACE", "sendShutdownGrace", in: 0...600).map { .seconds($0) }
            ?? sending.shutdownGrace
        sending.maximumInFlight =
            try reader.integer("HERALD_SEND_CONCURRENCY", "sendConcurrency", in: 1...100_000) ?? sending.maximumInFlight
        sending.runningSendsPerLane =
            try reader.integer("HERALD_RUNNING_SENDS", "runningSends", in: 1...1000) ?? sending.runningSendsPerLane
        sending.campaignThreshold =
            try reader.integer("HERALD_CAMPAIGN_THRESHOLD", "campaignThreshold", in: 0...100_000_000)
            ?? sending.campaignThreshold
        sending.shardSize =
            try reader.integer("HERALD_SHARD_SIZE", "shardSize", in: 0...100_000_000) ?? sending.shardSize
        sending.connectionsPerClient =
            try reader.integer("HERALD_APNS_CONNECTIONS", "apnsConnections", in: 1...64) ?? sending.connectionsPerClient
        sending.catchUpLimit =
            try reader.integer("HERALD_SCHEDULE_CATCH_UP", "scheduleCatchUp", in: 0...31_622_400).map { .seconds($0) }
            ?? sending.catchUpLimit
        sending.retry.retryWindow =
            try reader.integer("HERALD_RETRY_WINDOW", "retryWindow", in: 0...604_800).map { .seconds($0) }
            ?? sending.retry.retryWindow
        console.idleTimeout =
            try reader.integer("HERALD_CONSOLE_IDLE_TIMEOUT", "consoleIdleTimeout", in: 60...604_800).map { .seconds($0) }
            ?? console.idleTimeout
        try readRetention(reader: reader)
        try readWebhooks(reader: reader)
        liveActivities.updateBudget =
            try reader.integer("HERALD_LIVE_ACTIVITY_BUDGET", "liveActivityBudget", in: 0...3600)
            ?? liveActivities.updateBudget
        liveActivities.pushToStartRate =
            try reader.integer("HERALD_PUSH_TO_START_RATE", "pushToStartRate", in: 0...100_000)
            ?? liveActivities.pushToStartRate
        liveActivities.startCheckAfter =
            try reader.integer("HERALD_PUSH_TO_START_CHECK_AFTER", "pushToStartCheckAfter", in: 0...2_592_000)
            ?? liveActivities.startCheckAfter
        liveActivities.staleAfter =
            try reader.integer("HERALD_PUSH_TO_START_STALE_AFTER", "pushToStartStaleAfter", in: 0...1_000)
            ?? liveActivities.staleAfter
        liveActivities.channelTidy = try reader.bool("HERALD_CHANNEL_TIDY", "channelTidy") ?? liveActivities.channelTidy
        if let text = try reader.string("HERALD_WEB_PUSH_HOSTS", "webPushHosts") {
            guard let hosts = PushServiceHosts(list: text) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_WEB_PUSH_HOSTS", "webPushHosts")) is \"\(text)\": write push-service hosts separated by commas, each a host, *.domain or host:port, such as web.push.apple.com,*.notify.windows.com."
                )
            }
            webPushHosts = hosts
        }
        liveActivities.channelUnusedAfter =
            try reader.integer("HERALD_CHANNEL_UNUSED_AFTER", "channelUnusedAfter", in: 60...31_536_000)
            ?? liveActivities.channelUnusedAfter
        try readMetrics(reader: reader)

        if let id = try reader.string("HERALD_INSTANCE_ID", "instanceId") {
            if let problem = InstanceLock.problem(with: id) {
                throw ConfigurationError(
                    "\(reader.name("HERALD_INSTANCE_ID", "instanceId")) is \"\(id)\": it \(problem). Write a name that stays the same across restarts and differs between the servers that share a database, such as api-1."
                )
            }
            instanceID = id
        }

        apps = try Self.readApps(reader: reader, file: file)
        apns = try Self.readAPNSMode(reader: reader)
        apiKeys = try Self.readAPIKeys(reader.string("HERALD_API_KEYS", "apiKeys"))
    }

    private mutating func readWebhooks(reader: SettingReader) throws(ConfigurationError) {
        if let days = try reader.integer("HERALD_RETENTION_WEBHOOKS_DAYS", "retentionWebhooksDays", in: 0...36_500) {
            retention.webhookDeliveries = days == 0 ? nil : .seconds(days * 86_400)
        }
        webhooks.enabled = try reader.bool("HERALD_WEBHOOKS", "webhooks") ?? webhooks.enabled
        webhooks.concurrency =
            try reader.integer("HERALD_WEBHOOK_CONCURRENCY", "webhookConcurrency", in: 1...64) ?? webhooks.concurrency
        webhooks.batchSize =
            try reader.integer("HERALD_WEBHOOK_BATCH", "webhookBatch", in: 1...1000) ?? webhooks.batchSize
        webhooks.pollInterval =
            try reader.integer("HERALD_WEBHOOK_POLL_INTERVAL_MS", "webhookPollIntervalMs", in: 10...60_000).map {
                .milliseconds($0)
            } ?? webhooks.pollInterval
        webhooks.timeout =
            try reader.integer("HERALD_WEBHOOK_TIMEOUT", "webhookTimeout", in: 1...60).map { .seconds($0) }
            ?? webhooks.timeout
        webhooks.pauseAfterFailures =
            try reader.integer("HERALD_WEBHOOK_PAUSE_AFTER_FAILURES", "webhookPauseAfterFailures", in: 1...1000)
            ?? webhooks.pauseAfterFailures
        webhooks.pauseAfter =
            try reader.integer("HERALD_WEBHOOK_PAUSE_AFTER", "webhookPauseAfter", in: 0...604_800).map { .seconds($0) }
            ?? webhooks.pauseAfter
        webhooks.secretOverlap =
            try reader.integer("HERALD_WEBHOOK_SECRET_OVERLAP", "webhookSecretOverlap", in: 0...2_592_000).map {
                .seconds($0)
            } ?? webhooks.secretOverlap
        // A claim must outlive its POST, or a slow receiver's batch would be claimed again while it is being posted.
        webhooks.lease = max(webhooks.lease, webhooks.timeout * 3)
    }

    private mutating func readRetention(reader: SettingReader) throws(ConfigurationError) {
        func days(_ variable: String, _ key: String, _ value: inout Duration?) throws(ConfigurationError) {
            guard let days = try reader.integer(variable, key, in: 0...36_500) else { return }
            value = days == 0 ? nil : .seconds(days * 86_400)
        }
        try days("HERALD_RETENTION_OUTCOMES_DAYS", "retentionOutcomesDays", &retention.outcomes)
        try days("HERALD_RETENTION_RECEIPTS_DAYS", "retentionReceiptsDays", &retention.receiptEvents)
        try days("HERALD_RETENTION_SENDS_DAYS", "retentionSendsDays", &retention.sends)
        try days("HERALD_RETENTION_CONSOLE_SESSIONS_DAYS", "retentionConsoleSessionsDays", &retention.consoleSessions)
        try days(
            "HERALD_RETENTION_INVALIDATED_TOKENS_DAYS", "retentionInvalidatedTokensDays", &retention.invalidatedTokens)
        try days("HERALD_RETENTION_AUDIT_DAYS", "retentionAuditDays", &retention.auditLog)
        retention.interval =
            try reader.integer("HERALD_RETENTION_INTERVAL", "retentionInterval", in: 60...604_800).map { .seconds($0) }
            ?? retention.interval
        retention.batchSize =
            try reader.integer("HERALD_RETENTION_BATCH", "retentionBatch", in: 1...100_000) ?? retention.batchSize
        if let sessions = retention.consoleSessions, sessions < console.idleTimeout {
            let name = reader.name("HERALD_RETENTION_CONSOLE_SESSIONS_DAYS", "retentionConsoleSessionsDays")
            throw ConfigurationError(
                "\(name) keeps console sessions for less than HERALD_CONSOLE_IDLE_TIMEOUT (\(console.idleTimeout.components.seconds) s): sessions still in use would be deleted. Keep them at least \((console.idleTimeout.components.seconds + 86_399) / 86_400) days, or 0 for ever."
            )
        }
    }

    private static func readFile(_ path: String) throws(ConfigurationError) -> [String: JSONValue] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError(
                "HERALD_CONFIG names \(path), which cannot be read: check the path and permissions.")
        }
        guard let value = try? JSONValue(parsing: data), case .object(let members) = value else {
            throw ConfigurationError(
                "\(path) is not a JSON object: write the settings as {\"listen\": \"127.0.0.1:8080\", \"apps\": [...]}."
            )
        }
        return members
    }

    private static func readApps(reader: SettingReader, file: [String: JSONValue]) throws(ConfigurationError)
        -> [AppConfiguration]
    {
        var apps: [AppConfiguration] = []
        if let list = file["apps"] {
            guard case .array(let entries) = list else {
                throw ConfigurationError("The configuration file's \"apps\" must be an array of objects, one per app.")
            }
            for (index, entry) in entries.enumerated() {
                guard case .object(let members) = entry else {
                    throw ConfigurationError(
                        "apps[\(index)] in the configuration file must be an object with a \"topic\".")
                }
                let appReader = SettingReader(environment: [:], file: members, context: "apps[\(index)].")
                guard let topic = try appReader.string("", "topic") else {
                    throw ConfigurationError(
                        "apps[\(index)] in the configuration file has no \"topic\": add the app's bundle id.")
                }
                apps.append(try readApp(topic: topic, reader: appReader))
            }
        }
        let perAppVariables = [
            "HERALD_TOPIC", "HERALD_TEAM_ID", "HERALD_KEY_ID", "HERALD_KEY_FILE", "HERALD_CERTIFICATE_FILE",
            "HERALD_PRIVATE_KEY_FILE", "HERALD_P12_FILE", "HERALD_REGISTRATION_KEYS", "HERALD_CONTENT_KEY",
            "HERALD_RECEIPTS", "HERALD_SEND_WEIGHT", "HERALD_PREFERENCE_CATEGORIES", "HERALD_DEFAULT_PREFERENCE_CATEGORY",
            "HERALD_SEND_PRIORITY",
            "HERALD_FREQUENCY_CAPS",
            "HERALD_QUIET_HOURS", "HERALD_QUIET_HOURS_TIME_ZONE",
            "HERALD_VAPID_PRIVATE_KEY", "HERALD_VAPID_KEY_FILE", "HERALD_VAPID_SUBJECT", "HERALD_WEB_ORIGIN",
            "HERALD_WEB_PUSH_FORMAT",
        ]
        let environmentOnly = SettingReader(environment: reader.environment, file: [:])
        if perAppVariables.contains(where: { reader.environment[$0].map { !$0.isEmpty } ?? false }) || apps.isEmpty {
            let topic =
                try environmentOnly.string("HERALD_TOPIC", "")
                ?? (apps.count == 1 ? apps[0].bundleID : AppConfiguration.defaultBundleID)
            let app = try readApp(topic: topic, reader: environmentOnly)
            if let index = apps.firstIndex(where: { $0.bundleID == topic }) {
                var merged = apps[index]
                if app.credentials != nil { merged.credentials = app.credentials }
                if !app.registrationKeys.isEmpty { merged.registrationKeys = app.registrationKeys }
                if app.contentKey != nil { merged.contentKey = app.contentKey }
                if reader.environment["HERALD_RECEIPTS"].map({ !$0.isEmpty }) ?? false { merged.receipts = app.receipts }
                if reader.environment["HERALD_SEND_WEIGHT"].map({ !$0.isEmpty }) ?? false {
                    merged.sendWeight = app.sendWeight
                }
                if reader.environment["HERALD_SEND_PRIORITY"].map({ !$0.isEmpty }) ?? false {
                    merged.sendPriority = app.sendPriority
                }
                if !app.preferenceCategories.isEmpty { merged.preferenceCategories = app.preferenceCategories }
                if app.defaultPreferenceCategory != nil {
                    merged.defaultPreferenceCategory = app.defaultPreferenceCategory
                }
                if !app.frequencyCaps.isEmpty { merged.frequencyCaps = app.frequencyCaps }
                if app.quietHours != nil { merged.quietHours = app.quietHours }
                if app.webPush != nil { merged.webPush = app.webPush }
                if reader.environment["HERALD_QUIET_HOURS_TIME_ZONE"].map({ !$0.isEmpty }) ?? false {
                    merged.quietHoursTimeZone = app.quietHoursTimeZone
                }
                apps[index] = merged
            } else {
                apps.append(app)
            }
        }
        var seen = Set<String>()
        for app in apps where !seen.insert(app.bundleID).inserted {
            throw ConfigurationError("The app \(app.bundleID) is configured twice: keep one entry per topic.")
        }
        // Once the file's apps and the variables are merged: the variables may name a default the file declares.
        for app in apps {
            try checkDefaultCategory(of: app)
            try checkFrequencyCaps(of: app)
        }
        return apps
    }

    private static func readApp(topic: String, reader: SettingReader) throws(ConfigurationError) -> AppConfiguration {
        guard !topic.isEmpty, topic.utf8.count <= RegistrationRules.maximumTopicBytes,
            !topic.contains(where: \.isWhitespace),
            APNSPushType.impliedBySuffix(ofTopic: topic) == nil
        else {
            throw ConfigurationError(
                "\(reader.name("HERALD_TOPIC", "topic")) is \"\(topic)\": write the app's bundle id, such as com.example.app, without a push-type suffix."
            )
        }
        var app = AppConfiguration(bundleID: topic)
        let keyFile = try reader.string("HERALD_KEY_FILE", "keyFile")
        let certificateFile = try reader.string("HERALD_CERTIFICATE_FILE", "certificateFile")
        let p12File = try reader.string("HERALD_P12_FILE", "p12File")
        if [keyFile, certificateFile, p12File].compactMap({ $0 }).count > 1 {
            throw ConfigurationError(
                "\(topic) has more than one kind of credentials: use a .p8 key, a PEM certificate or a .p12, not several."
            )
        }
        if let keyFile {
            guard let teamID = try reader.string("HERALD_TEAM_ID", "teamId") else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_TEAM_ID", "teamId")) is missing: set it to the 10-character Team ID of your Apple developer account."
                )
            }
            let keyID = try reader.string("HERALD_KEY_ID", "keyId")
            do {
                app.credentials = .key(
                    try ProviderSigningKey(contentsOf: URL(fileURLWithPath: keyFile), keyID: keyID, teamID: teamID))
                app.credentials?.file = keyFile
            } catch {
                throw ConfigurationError(
                    "\(reader.name("HERALD_KEY_FILE", "keyFile")) (\(keyFile)): \(error.description)")
            }
        } else if let certificateFile {
            guard let privateKeyFile = try reader.string("HERALD_PRIVATE_KEY_FILE", "privateKeyFile") else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_PRIVATE_KEY_FILE", "privateKeyFile")) is missing: name the PEM private key of the certificate."
                )
            }
            app.credentials = .certificate(
                chainPEM: try readText(certificateFile), privateKeyPEM: try readText(privateKeyFile))
            app.credentials?.file = certificateFile
        } else if let p12File {
            guard let data = FileManager.default.contents(atPath: p12File) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_P12_FILE", "p12File")) names \(p12File), which cannot be read.")
            }
            app.credentials = .pkcs12(Array(data), passphrase: try reader.string("HERALD_P12_PASSWORD", "p12Password"))
            app.credentials?.file = p12File
        }
        app.registrationKeys = try reader.list("HERALD_REGISTRATION_KEYS", "registrationKeys")
        app.receipts = try reader.bool("HERALD_RECEIPTS", "receipts") ?? true
        app.sendWeight = try reader.integer("HERALD_SEND_WEIGHT", "sendWeight", in: 1...1000) ?? 1
        if let priority = try reader.string("HERALD_SEND_PRIORITY", "sendPriority") {
            guard let parsed = AppPriority(rawValue: priority) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_SEND_PRIORITY", "sendPriority")) is \"\(priority)\": use high, normal or low.")
            }
            app.sendPriority = parsed
        }
        app.preferenceCategories = try readPreferenceCategories(reader: reader)
        app.defaultPreferenceCategory = try reader.string(
            "HERALD_DEFAULT_PREFERENCE_CATEGORY", "defaultPreferenceCategory")
        app.frequencyCaps = try readFrequencyCaps(reader: reader)
        if let text = try reader.string("HERALD_QUIET_HOURS", "quietHours") {
            guard let window = QuietHours(text) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_QUIET_HOURS", "quietHours")) is \"\(text)\": write a window of local time such as 22:00-08:00 (start and end differ), or leave it empty for none."
                )
            }
            app.quietHours = window
        }
        if let zoneName = try reader.string("HERALD_QUIET_HOURS_TIME_ZONE", "quietHoursTimeZone") {
            guard TokenRegistration.isTimeZoneID(zoneName), let zone = TimeZone(identifier: zoneName) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_QUIET_HOURS_TIME_ZONE", "quietHoursTimeZone")) is \"\(zoneName)\": use an IANA time zone id such as Europe/Paris."
                )
            }
            app.quietHoursTimeZone = zone
        }
        if let text = try reader.string("HERALD_CONTENT_KEY", "contentKey") {
            guard let colon = text.firstIndex(of: ":") else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_CONTENT_KEY", "contentKey")) must be id:base64, such as k1:<44 base64 characters>."
                )
            }
            do {
                app.contentKey = try ContentEncryptionKey(
                    id: String(text[..<colon]), base64: String(text[text.index(after: colon)...]))
            } catch {
                throw ConfigurationError("\(reader.name("HERALD_CONTENT_KEY", "contentKey")): \(error.description)")
            }
        }
        app.webPush = try readWebPush(reader: reader)
        return app
    }

    /// An app's website (``AppConfiguration/WebPush``): its VAPID key, subject and origin, all or nothing.
    private static func readWebPush(reader: SettingReader) throws(ConfigurationError) -> AppConfiguration.WebPush? {
        let keyText = try reader.string("HERALD_VAPID_PRIVATE_KEY", "vapidPrivateKey")
        let keyFile = try reader.string("HERALD_VAPID_KEY_FILE", "vapidKeyFile")
        let subject = try reader.string("HERALD_VAPID_SUBJECT", "vapidSubject")
        let origin = try reader.string("HERALD_WEB_ORIGIN", "webOrigin")
        let formatName = try reader.string("HERALD_WEB_PUSH_FORMAT", "webPushFormat")
        let keyName = reader.name("HERALD_VAPID_PRIVATE_KEY", "vapidPrivateKey")
        guard keyText != nil || keyFile != nil else {
            if subject != nil || origin != nil || formatName != nil {
                throw ConfigurationError(
                    "A VAPID subject, web origin or web push format is set without a VAPID key: set \(keyName) (make one with `herald vapid generate`), or remove them."
                )
            }
            return nil
        }
        guard keyText == nil || keyFile == nil else {
            throw ConfigurationError(
                "Both \(keyName) and \(reader.name("HERALD_VAPID_KEY_FILE", "vapidKeyFile")) are set: keep one.")
        }
        var text = keyText ?? ""
        if let keyFile {
            guard let contents = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_VAPID_KEY_FILE", "vapidKeyFile")) names \(keyFile), which cannot be read: check the path and its permissions."
                )
            }
            text = contents
        }
        let key: VAPIDKey
        do {
            key = try VAPIDKey(text: text)
        } catch {
            throw ConfigurationError("\(keyName): \(error.message)")
        }
        guard let subject else {
            throw ConfigurationError(
                "\(reader.name("HERALD_VAPID_SUBJECT", "vapidSubject")) is missing: with a VAPID key, push services need a mailto: or https: URL to reach you, such as mailto:push@example.com."
            )
        }
        var format = WebPushMessage.Format.declarative
        if let formatName {
            guard let named = WebPushMessage.Format(rawValue: formatName.lowercased()) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_WEB_PUSH_FORMAT", "webPushFormat")) is \"\(formatName)\": use declarative (Safari shows the message itself) or classic (the site's service worker shows every message).")
            }
            format = named
        }
        return try AppConfiguration.WebPush(vapidKey: key, subject: subject, origin: origin, format: format)
    }

    /// `name` (on unless turned off), `name:off` (off unless turned on) or `name:mandatory`, each name once.
    private static func readPreferenceCategories(reader: SettingReader) throws(ConfigurationError)
        -> [PreferenceCategory]
    {
        let setting = reader.name("HERALD_PREFERENCE_CATEGORIES", "preferenceCategories")
        var categories: [PreferenceCategory] = []
        for declaration in try reader.list("HERALD_PREFERENCE_CATEGORIES", "preferenceCategories") {
            let parts = declaration.split(separator: ":", maxSplits: 1).map(String.init)
            let modeName = parts.count == 2 ? parts[1].lowercased() : "on"
            guard let mode = PreferenceCategory.Mode(rawValue: modeName) else {
                throw ConfigurationError(
                    "\(setting) has \"\(declaration)\": write name, name:off or name:mandatory, such as marketing:off.")
            }
            let category: PreferenceCategory
            do {
                category = try PreferenceCategory(name: parts.first ?? "", mode: mode)
            } catch {
                throw ConfigurationError("\(setting): \(error.description)")
            }
            guard !categories.contains(where: { $0.name == category.name }) else {
                throw ConfigurationError("\(setting) declares \(category.name) twice: keep one.")
            }
            categories.append(category)
        }
        return categories
    }

    /// `[category:]count/period`, each category and period once.
    private static func readFrequencyCaps(reader: SettingReader) throws(ConfigurationError) -> [FrequencyCap] {
        let setting = reader.name("HERALD_FREQUENCY_CAPS", "frequencyCaps")
        var caps: [FrequencyCap] = []
        for text in try reader.list("HERALD_FREQUENCY_CAPS", "frequencyCaps") {
            let cap: FrequencyCap
            do {
                cap = try FrequencyCap(parsing: text)
            } catch {
                throw ConfigurationError("\(setting): \(error.description)")
            }
            guard !caps.contains(where: { $0.category == cap.category && $0.periodSeconds == cap.periodSeconds }) else {
                throw ConfigurationError(
                    "\(setting) caps \(cap.category ?? "*") twice over the same period: keep one.")
            }
            caps.append(cap)
        }
        return caps
    }

    /// A cap names a category the app declares, and not a mandatory one, which is never capped.
    private static func checkFrequencyCaps(of app: AppConfiguration) throws(ConfigurationError) {
        for cap in app.frequencyCaps {
            guard let name = cap.category else { continue }
            guard let category = app.preferenceCategories.named(name) else {
                throw ConfigurationError(
                    "HERALD_FREQUENCY_CAPS (\"frequencyCaps\") of \(app.bundleID) caps \(name), which it does not declare: declare it in HERALD_PREFERENCE_CATEGORIES (\"preferenceCategories\"), or write *: for every category."
                )
            }
            guard category.mode != .mandatory else {
                throw ConfigurationError(
                    "HERALD_FREQUENCY_CAPS (\"frequencyCaps\") of \(app.bundleID) caps \(name), which is mandatory: mandatory notifications are never capped; remove that cap."
                )
            }
        }
    }

    private static func checkDefaultCategory(of app: AppConfiguration) throws(ConfigurationError) {
        guard let name = app.defaultPreferenceCategory, app.preferenceCategories.named(name) == nil else { return }
        let declared = app.preferenceCategories.map(\.name)
        throw ConfigurationError(
            "HERALD_DEFAULT_PREFERENCE_CATEGORY (\"defaultPreferenceCategory\") of \(app.bundleID) is \(name), which it does not declare: "
                + (declared.isEmpty
                    ? "declare it in HERALD_PREFERENCE_CATEGORIES (\"preferenceCategories\")."
                    : "use one of \(declared.joined(separator: ", ")), or declare it."))
    }

    private static func readText(_ path: String) throws(ConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(path) cannot be read: check the path and permissions.")
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func readAPNSMode(reader: SettingReader) throws(ConfigurationError) -> APNSMode {
        let mode = try reader.string("HERALD_APNS", "apns")?.lowercased() ?? "auto"
        switch mode {
        case "auto", "automatic":
            return .automatic(emulator: try readEmulatorSettings(reader: reader))
        case "apple":
            return .apple
        case "emulator":
            return .emulator(try readEmulatorSettings(reader: reader))
        case "custom":
            let host = try reader.string("HERALD_APNS_HOST", "apnsHost") ?? "127.0.0.1"
            let production =
                try reader.integer("HERALD_APNS_PRODUCTION_PORT", "apnsProductionPort", in: 1...65535) ?? 7443
            let development =
                try reader.integer("HERALD_APNS_DEVELOPMENT_PORT", "apnsDevelopmentPort", in: 1...65535) ?? 7444
            let trust = try reader.string("HERALD_APNS_CA_FILE", "apnsCAFile").map { path throws(ConfigurationError) in
                try readText(path)
            }
            var custom = APNSMode.CustomHost(
                host: host, productionPort: production, developmentPort: development, trustPEM: trust)
            func port(_ variable: String, _ key: String, _ value: inout Int) throws(ConfigurationError) {
                if let read = try reader.integer(variable, key, in: 1...65535) { value = read }
            }
            try port("HERALD_APNS_BROADCAST_PRODUCTION_PORT", "apnsBroadcastProductionPort", &custom.broadcastProductionPort)
            try port(
                "HERALD_APNS_BROADCAST_DEVELOPMENT_PORT", "apnsBroadcastDevelopmentPort", &custom.broadcastDevelopmentPort)
            try port("HERALD_APNS_CHANNELS_PRODUCTION_PORT", "apnsChannelsProductionPort", &custom.channelsProductionPort)
            try port(
                "HERALD_APNS_CHANNELS_DEVELOPMENT_PORT", "apnsChannelsDevelopmentPort", &custom.channelsDevelopmentPort)
            return .custom(custom)
        default:
            throw ConfigurationError("HERALD_APNS is \"\(mode)\": write auto, apple, emulator or custom.")
        }
    }

    private static func readEmulatorSettings(reader: SettingReader) throws(ConfigurationError)
        -> APNSMode.EmulatorSettings
    {
        var settings = APNSMode.EmulatorSettings(caFile: "herald-emulator-ca.pem")
        if let admin = try reader.string("HERALD_EMULATOR_ADMIN_PORT", "emulatorAdminPort") {
            if admin == "off" {
                settings.adminPort = nil
            } else {
                guard let port = Int(admin), (0...65535).contains(port) else {
                    throw ConfigurationError(
                        "HERALD_EMULATOR_ADMIN_PORT is \"\(admin)\": write a port (0 picks a free one) or off.")
                }
                settings.adminPort = port
            }
        }
        if let caFile = try reader.string("HERALD_EMULATOR_CA_FILE", "emulatorCAFile") { settings.caFile = caFile }
        settings.countingOnly = try reader.bool("HERALD_EMULATOR_COUNTING", "emulatorCounting") ?? false
        return settings
    }

    /// Parses `name:scope+scope:secret` entries separated by commas.
    static func readAPIKeys(_ text: String?) throws(ConfigurationError) -> [BootstrapAPIKey] {
        guard let text, !text.isEmpty else { return [] }
        return try text.split(separator: ",").map { entry throws(ConfigurationError) in
            let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, !parts[0].isEmpty else {
                throw ConfigurationError(
                    "HERALD_API_KEYS entries are name:scope+scope:secret with a secret of at least \(APIKeySecret.minimumSecretCharacters) characters, such as backend:send:<secret>."
                )
            }
            let secret = APIKeySecret(parts[2])
            guard secret.secretCharacterCount >= APIKeySecret.minimumSecretCharacters else {
                throw ConfigurationError(
                    "HERALD_API_KEYS entry \(parts[0]) has a secret of \(max(0, secret.secretCharacterCount)) characters: use at least \(APIKeySecret.minimumSecretCharacters) random ones (openssl rand -hex 24 makes 48), or create the key with herald keys create."
                )
            }
            let scopes = Set(parts[1].split(separator: "+").map { APIKeyScope(rawValue: String($0)) })
            guard !scopes.isEmpty, scopes.isSubset(of: APIKeyScope.known) else {
                throw ConfigurationError(
                    "HERALD_API_KEYS entry \(parts[0]) has scopes \"\(parts[1])\": use send, admin and register, joined with +."
                )
            }
            return BootstrapAPIKey(name: parts[0], scopes: scopes, secret: parts[2])
        }
    }
}

/// Reads one setting from the environment first, then the file, with errors naming where it came from.
struct SettingReader {
    let environment: [String: String]
    let file: [String: JSONValue]
    var context = ""

    /// The name to show for a setting: the variable, or the file key.
    func name(_ variable: String, _ key: String) -> String {
        if !variable.isEmpty, environment[variable] != nil { return variable }
        if !key.isEmpty, file[key] != nil { return "\"\(context)\(key)\" in the configuration file" }
        return variable.isEmpty ? "\"\(context)\(key)\"" : variable
    }

    func string(_ variable: String, _ key: String) throws(ConfigurationError) -> String? {
        if !variable.isEmpty, let value = environment[variable], !value.isEmpty { return value }
        guard !key.isEmpty, let value = file[key], value != .null else { return nil }
        switch value {
        case .string(let text): return text.isEmpty ? nil : text
        case .integer(let number): return String(number)
        case .bool(let flag): return String(flag)
        default: throw ConfigurationError("\(name(variable, key)) must be a string, not \(value.typeName).")
        }
    }

    func integer(_ variable: String, _ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let text = try string(variable, key) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw ConfigurationError(
                "\(name(variable, key)) is \"\(text)\": write a whole number from \(range.lowerBound) to \(range.upperBound)."
            )
        }
        return number
    }

    func bool(_ variable: String, _ key: String) throws(ConfigurationError) -> Bool? {
        guard let text = try string(variable, key)?.lowercased() else { return nil }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError("\(name(variable, key)) is \"\(text)\": write true or false.")
        }
    }

    /// A comma-separated variable, or a file array of strings.
    func list(_ variable: String, _ key: String) throws(ConfigurationError) -> [String] {
        if let value = environment[variable], !value.isEmpty {
            return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        guard let value = file[key], value != .null else { return [] }
        guard case .array(let elements) = value, elements.allSatisfy({ $0.stringValue != nil }) else {
            throw ConfigurationError("\(name(variable, key)) must be an array of strings.")
        }
        return elements.compactMap(\.stringValue)
    }
}
