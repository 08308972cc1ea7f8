import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// `ServerConfiguration(environment:)`: the documented variables, the file, and errors that say what to do.
@Suite("Server: configuration")
struct ConfigurationTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws {
        temporary = try TemporaryDirectory(prefix: "herald-config")
    }

    func write(_ text: String, to name: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    @Test("no variables: 127.0.0.1:8080, SQLite in the working folder, one app, the emulator")
    func defaults() throws {
        let configuration = try ServerConfiguration(environment: [:])
        #expect(configuration.listen == .init(host: "127.0.0.1", port: 8080))
        #expect(configuration.databaseURL == "sqlite://herald.sqlite")
        #expect(configuration.apps.map(\.bundleID) == ["com.example.app"] && configuration.apps[0].credentials == nil)
        guard case .automatic(let emulator) = configuration.apns.kind else {
            Issue.record("expected automatic")
            return
        }
        #expect(emulator.adminPort == 7480 && emulator.caFile == "herald-emulator-ca.pem")
        #expect(configuration.limits.registrationsPerMinute == 600 && configuration.limits.inlineSendLimit == 100)
        #expect(configuration.instanceID == ServerConfiguration.defaultInstanceID && !configuration.instanceID.isEmpty)
        #expect(try ServerConfiguration(environment: ["HERALD_INSTANCE_ID": "api-1"]).instanceID == "api-1")
    }

    @Test("receipts are on by default, off per app in the file, and HERALD_RECEIPTS sets them for HERALD_TOPIC's app")
    func receipts() throws {
        #expect(try ServerConfiguration(environment: [:]).apps[0].receipts)
        let file = try write(
            #"{"apps": [{"topic": "com.acme.a", "receipts": false}, {"topic": "com.acme.b"}]}"#, to: "apps.json")
        let fromFile = try ServerConfiguration(environment: ["HERALD_CONFIG": file])
        #expect(fromFile.apps.map(\.receipts) == [false, true])
        let overridden = try ServerConfiguration(environment: [
            "HERALD_CONFIG": file, "HERALD_TOPIC": "com.acme.b", "HERALD_RECEIPTS": "off",
        ])
        #expect(overridden.apps.map(\.receipts) == [false, false])
        let error = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: ["HERALD_RECEIPTS": "maybe"])
        }
        #expect(error?.message.contains("HERALD_RECEIPTS") == true)
    }

    @Test("send priorities are normal by default, set per app in the file, and HERALD_SEND_PRIORITY sets HERALD_TOPIC's app")
    func sendPriorities() throws {
        #expect(try ServerConfiguration(environment: [:]).apps[0].sendPriority == .normal)
        let file = try write(
            #"{"apps": [{"topic": "com.acme.a", "sendPriority": "high"}, {"topic": "com.acme.b"}]}"#, to: "priority.json")
        #expect(try ServerConfiguration(environment: ["HERALD_CONFIG": file]).apps.map(\.sendPriority) == [.high, .normal])
        let overridden = try ServerConfiguration(environment: [
            "HERALD_CONFIG": file, "HERALD_TOPIC": "com.acme.b", "HERALD_SEND_PRIORITY": "low",
        ])
        #expect(overridden.apps.map(\.sendPriority) == [.high, .low])
        let error = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: ["HERALD_SEND_PRIORITY": "urgent"])
        }
        #expect(error?.message.contains("HERALD_SEND_PRIORITY") == true && error?.message.contains("high, normal or low") == true)
    }

    @Test("preference categories come from the variable or the file, with the default category; variables win")
    func preferenceCategories() throws {
        let configuration = try ServerConfiguration(environment: [
            "HERALD_PREFERENCE_CATEGORIES": "orders:mandatory, social,marketing:OFF",
            "HERALD_DEFAULT_PREFERENCE_CATEGORY": "orders",
        ])
        #expect(configuration.apps[0].preferenceCategories.map(\.description) == ["orders:mandatory", "social", "marketing:off"])
        #expect(configuration.apps[0].defaultPreferenceCategory == "orders")
        #expect(try ServerConfiguration(environment: [:]).apps[0].preferenceCategories.isEmpty)
        let file = try write(
            #"{"apps": [{"topic": "com.acme.a", "preferenceCategories": ["news:off", "chat"]}, {"topic": "com.acme.b"}]}"#,
            to: "categories.json")
        // The file declares the categories, the variables name the default for its app.
        let merged = try ServerConfiguration(environment: [
            "HERALD_CONFIG": file, "HERALD_TOPIC": "com.acme.a", "HERALD_DEFAULT_PREFERENCE_CATEGORY": "chat",
        ])
        #expect(merged.apps[0].preferenceCategories.map(\.description) == ["news:off", "chat"])
        #expect(merged.apps[0].defaultPreferenceCategory == "chat" && merged.apps[1].preferenceCategories.isEmpty)
    }

    static let vapid = VAPIDKey.generate().privateKeyText

    @Test("an app's website: its VAPID key (text or file), subject and origin; push-service hosts from HERALD_WEB_PUSH_HOSTS")
    func webPush() throws {
        let key = VAPIDKey.generate()
        let configuration = try ServerConfiguration(environment: [
            "HERALD_VAPID_PRIVATE_KEY": key.privateKeyText, "HERALD_VAPID_SUBJECT": "mailto:push@example.com",
            "HERALD_WEB_ORIGIN": "https://example.com", "HERALD_WEB_PUSH_HOSTS": "web.push.apple.com, 127.0.0.1:7490",
        ])
        let web = try #require(configuration.apps.first?.webPush)
        #expect(web.vapidKey.publicKeyText == key.publicKeyText && web.subject == "mailto:push@example.com")
        #expect(web.origin == "https://example.com" && !"\(web)".contains(key.privateKeyText))
        #expect(configuration.webPushHosts.allows("127.0.0.1", port: 7490) && !configuration.webPushHosts.allows("fcm.googleapis.com"))
        #expect(try ServerConfiguration(environment: [:]).apps.first?.webPush == nil)
        #expect(try ServerConfiguration(environment: [:]).webPushHosts == .default)

        let pem = try write(key.privateKeyPEM, to: "vapid.pem")
        let file = try write(
            #"{"apps": [{"topic": "com.acme.app", "vapidKeyFile": "\#(pem)", "vapidSubject": "https://acme.example/contact"}]}"#,
            to: "web.json")
        let fromFile = try ServerConfiguration(environment: ["HERALD_CONFIG": file])
        #expect(fromFile.apps.first?.webPush?.vapidKey.publicKeyText == key.publicKeyText)
        #expect(fromFile.apps.first?.webPush?.origin == nil)
    }

    @Test("frequency caps come from the variable or the file: [category:]count/period, app-wide or per category")
    func frequencyCaps() throws {
        let configuration = try ServerConfiguration(environment: [
            "HERALD_PREFERENCE_CATEGORIES": "orders:mandatory,marketing:off",
            "HERALD_FREQUENCY_CAPS": "marketing:3/day, *:10/1d, 20/1w, 1/30m, 5/12h",
        ])
        #expect(
            configuration.apps[0].frequencyCaps.map(\.description)
                == ["marketing:3/1d", "*:10/1d", "*:20/1w", "*:1/30m", "*:5/12h"])
        #expect(try ServerConfiguration(environment: [:]).apps[0].frequencyCaps.isEmpty)
        let file = try write(
            #"{"apps": [{"topic": "com.acme.a", "preferenceCategories": ["news"], "frequencyCaps": ["news:2/day"]}]}"#,
            to: "caps.json")
        let fromFile = try ServerConfiguration(environment: ["HERALD_CONFIG": file])
        #expect(fromFile.apps[0].frequencyCaps == [FrequencyCap(category: "news", limit: 2, periodSeconds: 86_400)])
    }

    @Test("quiet hours and their zone come from the variables or the file; none and UTC by default")
    func quietHours() throws {
        let defaults = try ServerConfiguration(environment: [:]).apps[0]
        // Foundation on Linux names UTC "GMT".
        #expect(defaults.quietHours == nil && defaults.quietHoursTimeZone.secondsFromGMT() == 0)
        let set = try ServerConfiguration(environment: [
            "HERALD_QUIET_HOURS": "22:00-07:30", "HERALD_QUIET_HOURS_TIME_ZONE": "Europe/Paris",
        ]).apps[0]
        #expect(set.quietHours == QuietHours("22:00-07:30") && set.quietHoursTimeZone.identifier == "Europe/Paris")
        #expect(try ServerConfiguration(environment: ["HERALD_QUIET_HOURS": ""]).apps[0].quietHours == nil)
        let file = try write(
            #"{"apps": [{"topic": "com.acme.a", "quietHours": "23:00-06:00", "quietHoursTimeZone": "Asia/Tokyo"}]}"#,
            to: "quiet.json")
        let fromFile = try ServerConfiguration(environment: ["HERALD_CONFIG": file]).apps[0]
        #expect(fromFile.quietHours?.description == "23:00-06:00" && fromFile.quietHoursTimeZone.identifier == "Asia/Tokyo")
    }

    @Test("variables set the listen address, database, limits, a .p8 app, registration and content keys")
    func variables() throws {
        let (pem, _) = TestSigningKeys.makePEM()
        let keyFile = try write(pem, to: "AuthKey_ABC123DEFG.p8")
        let contentKey = try ContentEncryptionKey.generate(id: "k1")
        let configuration = try ServerConfiguration(environment: [
            "HERALD_LISTEN": "0.0.0.0:9000", "HERALD_DATABASE_URL": "postgres://u:p@db/herald",
            "HERALD_TOPIC": "com.acme.app",
            "HERALD_TEAM_ID": "TEAM123456", "HERALD_KEY_FILE": keyFile, "HERALD_REGISTRATION_KEYS": "a, b",
            "HERALD_CONTENT_KEY": "k1:\(contentKey.base64)", "HERALD_RATE_LIMIT": "0", "HERALD_INLINE_SEND_LIMIT": "5",
            "HERALD_API_KEYS": "backend:send+admin:0123456789abcdefghij0123456789abcdefghij", "HERALD_APNS": "apple",
            "HERALD_SEND_SHUTDOWN_GRACE": "0",
        ])
        #expect(
            configuration.listen == .init(host: "0.0.0.0", port: 9000)
                && configuration.databaseURL.hasPrefix("postgres://"))
        let app = try #require(configuration.apps.first)
        #expect(configuration.apps.count == 1 && app.bundleID == "com.acme.app")
        #expect(
            app.credentials?.signingKey?.keyID == "ABC123DEFG" && app.credentials?.signingKey?.teamID == "TEAM123456")
        #expect(app.registrationKeys == ["a", "b"] && app.contentKey?.id == "k1")
        #expect(configuration.limits.registrationsPerMinute == 0 && configuration.limits.inlineSendLimit == 5)
        #expect(configuration.sending.shutdownGrace == .zero && ServerConfiguration().sending.shutdownGrace == .seconds(5))
        #expect(
            configuration.apiKeys == [
                .init(name: "backend", scopes: [.send, .admin], secret: "0123456789abcdefghij0123456789abcdefghij")
            ])
        #expect(!configuration.apiKeys[0].description.contains("0123456789"), "descriptions never show secrets")
        guard case .apple = configuration.apns.kind else {
            Issue.record("expected apple")
            return
        }
    }

    @Test("a JSON file describes several apps; variables win over it")
    func file() throws {
        let path = try write(
            #"""
            {"listen": "127.0.0.1:7000", "databaseURL": "sqlite:///tmp/x.sqlite", "rateLimit": 10,
             "apps": [{"topic": "com.acme.one", "registrationKeys": ["k1"]}, {"topic": "com.acme.two"}]}
            """#, to: "herald.json")
        let configuration = try ServerConfiguration(environment: [
            "HERALD_CONFIG": path, "HERALD_LISTEN": "127.0.0.1:7001",
        ])
        #expect(configuration.listen.port == 7001 && configuration.databaseURL == "sqlite:///tmp/x.sqlite")
        #expect(configuration.apps.map(\.bundleID) == ["com.acme.one", "com.acme.two"])
        #expect(configuration.apps[0].registrationKeys == ["k1"] && configuration.limits.registrationsPerMinute == 10)
        let replaced = try ServerConfiguration(environment: [
            "HERALD_CONFIG": path, "HERALD_TOPIC": "com.acme.two", "HERALD_REGISTRATION_KEYS": "k2",
        ])
        #expect(replaced.apps.count == 2 && replaced.apps[1].registrationKeys == ["k2"])
    }

    @Test("HERALD_APNS=custom points at another host; emulator settings are read")
    func apnsModes() throws {
        let ca = try write("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n", to: "ca.pem")
        let custom = try ServerConfiguration(environment: [
            "HERALD_APNS": "custom", "HERALD_APNS_PRODUCTION_PORT": "9443", "HERALD_APNS_DEVELOPMENT_PORT": "9444",
            "HERALD_APNS_CA_FILE": ca, "HERALD_APNS_BROADCAST_DEVELOPMENT_PORT": "9446",
            "HERALD_APNS_CHANNELS_PRODUCTION_PORT": "9496",
        ])
        guard case .custom(let host) = custom.apns.kind else {
            Issue.record("expected custom")
            return
        }
        #expect(
            host.host == "127.0.0.1" && host.productionPort == 9443 && host.developmentPort == 9444
                && host.trustPEM?.contains("BEGIN CERTIFICATE") == true)
        #expect(host.broadcastProductionPort == 7445 && host.broadcastDevelopmentPort == 9446, "herald emulator's default, or as set")
        #expect(host.channelsProductionPort == 9496 && host.channelsDevelopmentPort == 7495)
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration(environment: ["HERALD_APNS": "custom", "HERALD_APNS_CHANNELS_DEVELOPMENT_PORT": "0"])
        }
        let emulator = try ServerConfiguration(environment: [
            "HERALD_APNS": "emulator", "HERALD_EMULATOR_ADMIN_PORT": "off", "HERALD_EMULATOR_COUNTING": "true",
        ])
        guard case .emulator(let settings) = emulator.apns.kind else {
            Issue.record("expected emulator")
            return
        }
        #expect(settings.adminPort == nil && settings.countingOnly)
    }

    @Test(
        "a bad value names the variable and says what to write",
        arguments: [
            (["HERALD_LISTEN": "nowhere"], "HERALD_LISTEN"),
            (["HERALD_RATE_LIMIT": "-1"], "HERALD_RATE_LIMIT"),
            (["HERALD_APNS": "pigeon"], "HERALD_APNS"),
            (["HERALD_KEY_FILE": "/nonexistent/AuthKey_ABC123DEFG.p8"], "HERALD_TEAM_ID"),
            (
                ["HERALD_KEY_FILE": "/nonexistent/AuthKey_ABC123DEFG.p8", "HERALD_TEAM_ID": "TEAM123456"],
                "HERALD_KEY_FILE"
            ),
            (["HERALD_TOPIC": "com.acme.app.voip"], "HERALD_TOPIC"),
            (["HERALD_CONTENT_KEY": "nocolon"], "HERALD_CONTENT_KEY"),
            (["HERALD_API_KEYS": "backend:send:short"], "HERALD_API_KEYS"),
            (["HERALD_API_KEYS": "backend:root:0123456789abcdefgh"], "HERALD_API_KEYS"),
            (["HERALD_EMULATOR_ADMIN_PORT": "x"], "HERALD_EMULATOR_ADMIN_PORT"),
            (["HERALD_CONFIG": "/nonexistent.json"], "HERALD_CONFIG"),
            (["HERALD_INSTANCE_ID": "api/1"], "HERALD_INSTANCE_ID"),
            (["HERALD_INSTANCE_ID": String(repeating: "a", count: 65)], "HERALD_INSTANCE_ID"),
            (["HERALD_RETENTION_OUTCOMES_DAYS": "-1"], "HERALD_RETENTION_OUTCOMES_DAYS"),
            (["HERALD_RETENTION_INTERVAL": "5"], "HERALD_RETENTION_INTERVAL"),
            (["HERALD_SEND_SHUTDOWN_GRACE": "601"], "HERALD_SEND_SHUTDOWN_GRACE"),
            (["HERALD_PREFERENCE_CATEGORIES": "orders:maybe"], "HERALD_PREFERENCE_CATEGORIES"),
            (["HERALD_PREFERENCE_CATEGORIES": "or ders"], "HERALD_PREFERENCE_CATEGORIES"),
            (["HERALD_PREFERENCE_CATEGORIES": "orders,orders:off"], "HERALD_PREFERENCE_CATEGORIES"),
            (["HERALD_DEFAULT_PREFERENCE_CATEGORY": "orders"], "HERALD_DEFAULT_PREFERENCE_CATEGORY"),
            (["HERALD_FREQUENCY_CAPS": "3/fortnight"], "HERALD_FREQUENCY_CAPS"),
            (["HERALD_FREQUENCY_CAPS": "0/day"], "HERALD_FREQUENCY_CAPS"),
            (["HERALD_FREQUENCY_CAPS": "three/day"], "HERALD_FREQUENCY_CAPS"),
            (["HERALD_FREQUENCY_CAPS": "3/400d"], "HERALD_FREQUENCY_CAPS"),
            (["HERALD_FREQUENCY_CAPS": "*:3/day,10/1d"], "HERALD_FREQUENCY_CAPS"),
            (["HERALD_FREQUENCY_CAPS": "news:3/day"], "HERALD_FREQUENCY_CAPS"),
            (
                ["HERALD_PREFERENCE_CATEGORIES": "orders:mandatory", "HERALD_FREQUENCY_CAPS": "orders:3/day"],
                "HERALD_FREQUENCY_CAPS"
            ),
            (["HERALD_QUIET_HOURS": "22:00-22:00"], "HERALD_QUIET_HOURS"),
            (["HERALD_QUIET_HOURS": "10pm-8am"], "HERALD_QUIET_HOURS"),
            (["HERALD_QUIET_HOURS_TIME_ZONE": "Mars/Base"], "HERALD_QUIET_HOURS_TIME_ZONE"),
            (["HERALD_VAPID_PRIVATE_KEY": "not a key", "HERALD_VAPID_SUBJECT": "mailto:a@b.c"], "HERALD_VAPID_PRIVATE_KEY"),
            (["HERALD_VAPID_PRIVATE_KEY": ConfigurationTests.vapid], "HERALD_VAPID_SUBJECT"),
            (["HERALD_VAPID_PRIVATE_KEY": ConfigurationTests.vapid, "HERALD_VAPID_SUBJECT": "admin@localhost"], "mailto:"),
            (
                [
                    "HERALD_VAPID_PRIVATE_KEY": ConfigurationTests.vapid, "HERALD_VAPID_SUBJECT": "mailto:a@b.c",
                    "HERALD_WEB_ORIGIN": "https://example.com/app",
                ], "https://example.com"
            ),
            (["HERALD_VAPID_SUBJECT": "mailto:a@b.c"], "HERALD_VAPID_PRIVATE_KEY"),
            (["HERALD_VAPID_KEY_FILE": "/nonexistent.pem", "HERALD_VAPID_SUBJECT": "mailto:a@b.c"], "HERALD_VAPID_KEY_FILE"),
            (["HERALD_WEB_PUSH_HOSTS": "push.example.com:http"], "HERALD_WEB_PUSH_HOSTS"),
            (
                ["HERALD_RETENTION_CONSOLE_SESSIONS_DAYS": "1", "HERALD_CONSOLE_IDLE_TIMEOUT": "172800"],
                "HERALD_RETENTION_CONSOLE_SESSIONS_DAYS"
            ),
        ])
    func badValues(_ environment: [String: String], variable: String) {
        let error = #expect(throws: ConfigurationError.self) { try ServerConfiguration(environment: environment) }
        #expect(error?.message.contains(variable) == true, "\(error?.message ?? "")")
    }

    @Test("retention keeps outcomes and receipt events 30 days, sends 90, console sessions 7, invalidated tokens 30; variables and the file change them, 0 keeps forever")
    func retention() throws {
        let defaults = try ServerConfiguration(environment: [:]).retention
        #expect(defaults == ServerConfiguration.Retention())
        #expect(defaults.outcomes == .seconds(30 * 86_400) && defaults.receiptEvents == .seconds(30 * 86_400))
        #expect(defaults.sends == .seconds(90 * 86_400) && defaults.consoleSessions == .seconds(7 * 86_400))
        #expect(defaults.invalidatedTokens == .seconds(30 * 86_400))
        #expect(defaults.interval == .seconds(3600) && defaults.batchSize == 100)
        let file = try write(#"{"retentionSendsDays": 365, "retentionBatch": 100}"#, to: "retention.json")
        let set = try ServerConfiguration(environment: [
            "HERALD_CONFIG": file, "HERALD_RETENTION_OUTCOMES_DAYS": "7", "HERALD_RETENTION_RECEIPTS_DAYS": "0",
            "HERALD_RETENTION_CONSOLE_SESSIONS_DAYS": "1", "HERALD_RETENTION_INVALIDATED_TOKENS_DAYS": "0",
            "HERALD_RETENTION_INTERVAL": "600",
        ]).retention
        #expect(set.outcomes == .seconds(7 * 86_400) && set.receiptEvents == nil && set.invalidatedTokens == nil)
        #expect(set.sends == .seconds(365 * 86_400) && set.consoleSessions == .seconds(86_400))
        #expect(set.interval == .seconds(600) && set.batchSize == 100)
        #expect(set.ages.map(\.kind) == [.outcomes, .receiptEvents, .sends, .consoleSessions, .auditLog])
        #expect(defaults.auditLog == .seconds(365 * 86_400))
        let audit = try ServerConfiguration(environment: ["HERALD_RETENTION_AUDIT_DAYS": "30"]).retention.auditLog
        #expect(audit == .seconds(30 * 86_400))
        #expect(try ServerConfiguration(environment: ["HERALD_RETENTION_AUDIT_DAYS": "0"]).retention.auditLog == nil)
    }

    @Test("some apps with credentials and some without is refused unless pushes go to the emulator")
    func mixedCredentials() async throws {
        let database = try TestDatabase.make(.sqlite)
        var configuration = ServerHarness.configuration(databaseURL: database.url)
        configuration.apns = .automatic
        configuration.apps = [
            AppConfiguration(bundleID: "com.acme.one", credentials: .key(TestSigningKeys.make())),
            AppConfiguration(bundleID: "com.acme.two"),
        ]
        let error = await #expect(throws: ConfigurationError.self) {
            try await buildApplication(configuration: configuration)
        }
        #expect(error?.message.contains("HERALD_APNS=emulator") == true)
        await database.cleanup()
    }
}
