import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOPosix
import Prometheus
import SwiftASN1
import Testing
import X509

@testable import HeraldServer

/// Test certificates shaped like Apple's APNs client certificates: UID and common name naming the bundle id, and
/// Apple's environment extensions.
enum APNSTestCertificate {
    static let development: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 1]
    static let production: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 2]

    /// A self-signed certificate and its key, as PEM; `environments` picks Apple's extensions.
    static func make(
        topic: String, notBefore: Date = Date().addingTimeInterval(-86_400), notAfter: Date,
        environments: [ASN1ObjectIdentifier] = [development, production],
        commonName: String? = nil
    ) throws -> (certificate: String, key: String) {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName([
            RelativeDistinguishedName.Attribute(type: [0, 9, 2342, 19_200_300, 100, 1, 1], utf8String: topic),
            RelativeDistinguishedName.Attribute(
                type: .RDNAttributeType.commonName, utf8String: commonName ?? "Apple Push Services: \(topic)"),
        ])
        // Apple's environment extensions carry an ASN.1 NULL.
        let extensions = try Certificate.Extensions(
            environments.map { Certificate.Extension(oid: $0, critical: false, value: [0x05, 0x00]) })
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: .init(key))
        return (try certificate.serializeAsPEM().pemString, key.pemRepresentation)
    }

    /// A self-signed CA certificate with the given common name, as PEM: a stand-in for a root of the trust store.
    static func root(_ commonName: String) throws -> String {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName([RelativeDistinguishedName.Attribute(type: .RDNAttributeType.commonName, utf8String: commonName)])
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-86_400), notValidAfter: Date().addingTimeInterval(86_400 * 365),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(), issuerPrivateKey: .init(key))
        return try certificate.serializeAsPEM().pemString
    }
}

@Suite("herald doctor: each check")
struct DoctorTests {
    let temporary: TemporaryDirectory
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws { temporary = try TemporaryDirectory(prefix: "herald-doctor") }

    func doctor(
        _ apps: [AppConfiguration], apns: APNSMode = .apple, trustStore: [String] = [], database: String? = nil
    ) -> Doctor {
        var configuration = ServerConfiguration(apps: apps, apns: apns)
        if let database { configuration.databaseURL = database }
        let now = self.now
        return Doctor(
            configuration: configuration,
            options: Doctor.Options(trustStoreFiles: trustStore, trustStoreDirectory: nil, now: { now }))
    }

    func keyApp(_ topic: String = "com.example.app", keyID: String = "ABC123DEFG", teamID: String = "DEF123GHIJ", file: String? = nil)
        -> AppConfiguration
    {
        var credentials = AppConfiguration.Credentials.key(TestSigningKeys.make(keyID: keyID, teamID: teamID))
        credentials.file = file
        return AppConfiguration(bundleID: topic, credentials: credentials)
    }

    func certificateApp(_ topic: String = "com.example.app", pem: (certificate: String, key: String)) -> AppConfiguration {
        AppConfiguration(bundleID: topic, credentials: .certificate(chainPEM: pem.certificate, privateKeyPEM: pem.key))
    }

    func check(_ doctor: Doctor, _ app: AppConfiguration) -> DeploymentCheck { doctor.credentialsCheck(app).0 }

    // MARK: .p8 keys

    @Test("a good .p8 key signs a provider token, and neither the token nor the key appears in the message")
    func goodKey() {
        let app = keyApp(file: "/etc/herald/AuthKey_ABC123DEFG.p8")
        let result = check(doctor([app]), app)
        #expect(result.status == .ok, "\(result.message)")
        #expect(result.name == "credentials com.example.app")
        #expect(result.message.contains("ABC123DEFG") && result.message.contains("DEF123GHIJ"))
        #expect(!result.message.contains("eyJ") && !result.message.contains("PRIVATE KEY"))
    }

    @Test("a team id equal to the key id fails; a file named for another key and lower-case ids warn")
    func inconsistentIDs() {
        let same = keyApp(keyID: "ABC123DEFG", teamID: "ABC123DEFG")
        #expect(check(doctor([same]), same).status == .failure)
        let renamed = keyApp(file: "/keys/AuthKey_ZZZ999YYYY.p8")
        let named = check(doctor([renamed]), renamed)
        #expect(named.status == .warning && named.message.contains("ZZZ999YYYY"))
        let lower = keyApp(teamID: "def123ghij")
        let lowered = check(doctor([lower]), lower)
        #expect(lowered.status == .warning && lowered.message.contains("DEF123GHIJ"))
    }

    @Test("one key id under two teams, or two keys under one key id, fails")
    func keysAcrossApps() {
        let first = keyApp("com.example.app", teamID: "DEF123GHIJ")
        let otherTeam = keyApp("com.example.other", teamID: "XYZ123GHIJ")
        let result = check(doctor([first, otherTeam]), first)
        #expect(result.status == .failure && result.message.contains("com.example.other"))
        // Both made with TestSigningKeys.make: different key material under one id.
        let twin = keyApp("com.example.other", teamID: "DEF123GHIJ")
        #expect(check(doctor([first, twin]), first).status == .failure)
    }

    @Test("an app without credentials fails unless pushes go to the emulator")
    func noCredentials() {
        let app = AppConfiguration(bundleID: "com.example.app")
        #expect(check(doctor([app], apns: .apple), app).status == .failure)
        #expect(check(doctor([app], apns: .automatic), app).status == .skipped)
        let mixed = doctor([app, keyApp("com.example.other")], apns: .automatic)
        #expect(mixed.offlineChecks().checks.first?.status == .failure)
    }

    // MARK: Certificates

    @Test("a certificate: topic, environments and days to expiry; both environments get an expiry")
    func goodCertificate() throws {
        let app = certificateApp(pem: try APNSTestCertificate.make(topic: "com.example.app", notAfter: now.addingTimeInterval(400 * 86_400)))
        let (result, expiries) = doctor([app]).credentialsCheck(app)
        #expect(result.status == .ok, "\(result.message)")
        #expect(result.message.contains("com.example.app") && result.message.contains("development and production"))
        #expect(result.message.contains("400 days"))
        #expect(expiries.map(\.environment) == ["development", "production"])
        #expect(expiries.allSatisfy { $0.app == "com.example.app" && $0.notAfter == now.addingTimeInterval(400 * 86_400) })
    }

    @Test("a certificate expiring in 10 days warns; an expired one fails")
    func expiry() throws {
        let soon = certificateApp(
            pem: try APNSTestCertificate.make(topic: "com.example.app", notAfter: now.addingTimeInterval(10 * 86_400 + 3600)))
        let warned = check(doctor([soon]), soon)
        #expect(warned.status == .warning && warned.message.contains("expires in 10 days"), "\(warned.message)")
        let expired = certificateApp(
            pem: try APNSTestCertificate.make(
                topic: "com.example.app", notBefore: now.addingTimeInterval(-400 * 86_400), notAfter: now.addingTimeInterval(-86_400)))
        let failed = check(doctor([expired]), expired)
        #expect(failed.status == .failure && failed.message.contains("expired"), "\(failed.message)")
    }

    @Test("another app's certificate fails; a development-only one warns; the topic comes from the common name too")
    func topicAndEnvironment() throws {
        let other = certificateApp(pem: try APNSTestCertificate.make(topic: "com.example.other", notAfter: now.addingTimeInterval(400 * 86_400)))
        let wrong = check(doctor([other]), other)
        #expect(wrong.status == .failure && wrong.message.contains("com.example.other"))
        let sandbox = certificateApp(
            pem: try APNSTestCertificate.make(
                topic: "com.example.app", notAfter: now.addingTimeInterval(400 * 86_400), environments: [APNSTestCertificate.development]))
        let (result, expiries) = doctor([sandbox]).credentialsCheck(sandbox)
        #expect(result.status == .warning && result.message.contains("BadCertificateEnvironment"))
        #expect(expiries.map(\.environment) == ["development"])

        let pem = try APNSTestCertificate.make(
            topic: "com.example.app", notAfter: now.addingTimeInterval(400 * 86_400),
            commonName: "Apple Development IOS Push Services: com.example.app")
        let leaf = try Doctor.loadLeaf(.pem(chain: pem.certificate, key: pem.key))
        #expect(Doctor.APNSCertificateFacts(leaf).topic == "com.example.app")
    }

    @Test("a private key that is not the certificate's fails, as does text that is no certificate")
    func mismatchedKey() throws {
        let pem = try APNSTestCertificate.make(topic: "com.example.app", notAfter: now.addingTimeInterval(400 * 86_400))
        let other = try APNSTestCertificate.make(topic: "com.example.app", notAfter: now.addingTimeInterval(400 * 86_400))
        let app = certificateApp(pem: (pem.certificate, other.key))
        let result = check(doctor([app]), app)
        #expect(result.status == .failure && result.message.contains("private key"), "\(result.message)")
        #expect(!result.message.contains("PRIVATE KEY"))
        let garbage = certificateApp(pem: ("not a certificate", pem.key))
        #expect(check(doctor([garbage]), garbage).status == .failure)
    }

    @Test("a .p12 opens with its password and is read like PEM; a wrong password fails and says what to check")
    func pkcs12() async throws {
        let pem = try APNSTestCertificate.make(topic: "com.example.app", notAfter: now.addingTimeInterval(400 * 86_400))
        try pem.certificate.write(to: temporary.appending("push.pem"), atomically: true, encoding: .utf8)
        try pem.key.write(to: temporary.appending("push.key"), atomically: true, encoding: .utf8)
        let export = try await ProcessRunner.run(
            "openssl",
            ["pkcs12", "-export", "-in", temporary.appending("push.pem").path, "-inkey", temporary.appending("push.key").path,
             "-out", temporary.appending("push.p12").path, "-passout", "pass:s3cret"])
        try #require(export.status == 0, "\(export.standardError)")
        let data = Array(try Data(contentsOf: temporary.appending("push.p12")))
        let app = AppConfiguration(bundleID: "com.example.app", credentials: .pkcs12(data, passphrase: "s3cret"))
        let (opened, expiries) = doctor([app]).credentialsCheck(app)
        #expect(opened.status == .ok, "\(opened.message)")
        #expect(expiries.count == 2)
        let wrong = AppConfiguration(bundleID: "com.example.app", credentials: .pkcs12(data, passphrase: "guess"))
        let refused = check(doctor([wrong]), wrong)
        #expect(refused.status == .failure && refused.message.contains("HERALD_P12_PASSWORD") && !refused.message.contains("guess"))
    }

    // MARK: Trust store

    @Test("the trust store must hold USERTrust RSA when pushes go to Apple; it does not apply to an emulator")
    func trustStore() throws {
        let good = temporary.appending("good.pem")
        let roots = try APNSTestCertificate.root("Some Other Root") + APNSTestCertificate.root(Doctor.currentRoot)
        try roots.write(to: good, atomically: true, encoding: .utf8)
        let bad = temporary.appending("bad.pem")
        try APNSTestCertificate.root("AAA Certificate Services").write(to: bad, atomically: true, encoding: .utf8)
        let app = keyApp()
        let found = doctor([app], trustStore: ["/nonexistent/ca.crt", good.path]).trustStoreCheck()
        #expect(found.status == .ok && found.message.contains(good.path), "\(found.message)")
        let missing = doctor([app], trustStore: [bad.path]).trustStoreCheck()
        #expect(missing.status == .failure && missing.message.contains("USERTrust RSA Certification Authority"))
        #expect(doctor([app], trustStore: ["/nonexistent/ca.crt"]).trustStoreCheck().status == .failure)
        #expect(doctor([app], apns: .emulator(), trustStore: [bad.path]).trustStoreCheck().status == .skipped)
        let custom = APNSMode.custom(host: "127.0.0.1", productionPort: 7443, developmentPort: 7444)
        #expect(doctor([app], apns: custom, trustStore: [bad.path]).trustStoreCheck().status == .skipped)
    }

    // MARK: Clock and database

    @Test("clock skew: within 5 s ok, within a minute a warning, more a failure", arguments: [
        (0.2, DeploymentCheck.Status.ok), (-3, .ok), (30, .warning), (-45, .warning), (120, .failure), (-4000, .failure),
    ])
    func clock(skew: Double, status: DeploymentCheck.Status) {
        let verdict = Doctor.clockVerdict(skew: skew, uncertainty: 0.001)
        #expect(verdict.status == status, "\(verdict.message)")
        #expect(verdict.message.contains(skew < 0 ? "behind" : "ahead"))
    }

    @Test("the schema version against the binary's", arguments: [
        (StoreSchema.latestVersion, DeploymentCheck.Status.ok), (0, .warning), (1, .warning), (StoreSchema.latestVersion + 1, .failure),
    ])
    func schema(version: Int, status: DeploymentCheck.Status) {
        let health = StoreHealth(backend: "sqlite", schemaVersion: version, latestSchemaVersion: StoreSchema.latestVersion)
        #expect(Doctor.schemaCheck(health, database: "sqlite://x").status == status)
    }

    @Test("a SQLite file not made yet is a warning and is not created; a migrated one is ok; SQLite's clock is not checked")
    func sqlite() async throws {
        let path = temporary.appending("herald.sqlite").path
        let first = await doctor([keyApp()], database: "sqlite://" + path).databaseChecks()
        #expect(first.map(\.status) == [.warning, .skipped], "\(first)")
        #expect(!FileManager.default.fileExists(atPath: path))
        let unwritable = await doctor([keyApp()], database: "sqlite:///proc/herald-doctor/herald.sqlite").databaseChecks()
        #expect(unwritable.first?.status == .failure)

        let store = try StoreFactory.open(url: "sqlite://" + path)
        try await store.migrate()
        await store.close()
        let checks = await doctor([keyApp()], database: "sqlite://" + path).databaseChecks()
        #expect(checks.map(\.name) == ["database", "clock", "disk"])
        #expect(checks.prefix(2).map(\.status) == [.ok, .skipped], "\(checks)")
        #expect(checks.last?.message.contains("MB free") == true, "\(checks)")
    }

    @Test("the free space under a SQLite file: a failure below 100 MB, a warning below 1 GB or a tenth of the disk")
    func disk() {
        let gigabyte: Int64 = 1_000_000_000
        #expect(Doctor.diskVerdict(free: 50_000_000, total: 100 * gigabyte, folder: "/d").status == .failure)
        #expect(Doctor.diskVerdict(free: 500_000_000, total: 2 * gigabyte, folder: "/d").status == .warning)
        #expect(Doctor.diskVerdict(free: 5 * gigabyte, total: 100 * gigabyte, folder: "/d").status == .warning)
        let roomy = Doctor.diskVerdict(free: 50 * gigabyte, total: 100 * gigabyte, folder: "/d")
        #expect(roomy.status == .ok && roomy.message == "/d has 50000 MB free.", "\(roomy)")
        #expect(Doctor.diskVerdict(free: 50_000_000, total: 0, folder: "/d").message.contains("sends pause"))
    }

    @Test("PostgreSQL: reachable, schema and the clock compared with the database's", .enabled(if: testDatabaseURL != nil))
    func postgres() async throws {
        try await TestDatabase.with(.postgres) { url in
            var configuration = ServerConfiguration(apps: [keyApp()], apns: .apple)
            configuration.databaseURL = url
            let empty = await Doctor(configuration: configuration).databaseChecks()
            #expect(empty.map(\.status) == [.warning, .ok], "\(empty)")
            #expect(empty[1].message.contains("PostgreSQL's"))
            #expect(!empty.contains { $0.message.contains("herald-ci") }, "no password in the messages")
        }
    }

    @Test("an unreachable database fails and says what to check")
    func unreachable() async throws {
        let checks = await doctor(
            [keyApp()], database: "postgres://herald:secret-password@127.0.0.1:1/herald?connect_timeout=2"
        ).databaseChecks()
        #expect(checks.map(\.status) == [.failure, .skipped], "\(checks)")
        #expect(!checks[0].message.contains("secret-password"))
    }

    // MARK: Listen address

    @Test("a free address is bound and let go; a taken one is said to be taken; a foreign address fails")
    func listen() async throws {
        let taken = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(taken.localAddress?.port)
        var configuration = ServerConfiguration(apps: [keyApp()], apns: .apple)
        configuration.listen = .init(host: "127.0.0.1", port: port)
        let busy = await Doctor(configuration: configuration).listenCheck()
        #expect(busy.status == .warning && busy.message.contains("already listens"), "\(busy.message)")
        try await taken.close()
        let free = await Doctor(configuration: configuration).listenCheck()
        #expect(free.status == .ok, "\(free.message)")
        configuration.listen = .init(host: "192.0.2.1", port: port)
        #expect(await Doctor(configuration: configuration).listenCheck().status == .failure)
    }

    // MARK: Report

    @Test("the JSON keeps its key order and escapes; any failure makes ok false; warnings alone do not")
    func json() throws {
        let report = DeploymentReport(checks: [
            DeploymentCheck("database", .warning, "a \"quoted\"\nline"), DeploymentCheck("listen", .ok, "fine"),
        ])
        #expect(!report.hasFailure)
        let parsed = try JSONValue(parsing: Data(report.json.utf8))
        #expect(parsed == ["checks": [["name": "database", "status": "warning", "message": "a \"quoted\"\nline"], ["name": "listen", "status": "ok", "message": "fine"]], "ok": true])
        #expect(report.json.hasPrefix("{\"checks\": [\n  {\"name\": \"database\", \"status\": \"warning\", \"message\": "))
        let failed = DeploymentReport(checks: report.checks + [DeploymentCheck("clock", .failure, "x")])
        #expect(failed.hasFailure && failed.json.hasSuffix("\"ok\": false}"))
        #expect(failed.text.contains("! database: ") && failed.text.contains("✓ listen: fine") && failed.text.contains("✗ clock: x"))
    }

    @Test("certificate expiry becomes herald_apns_certificate_expiry_timestamp_seconds{app,environment}")
    func metric() {
        let registry = PrometheusCollectorRegistry()
        ServerMetrics(registry: registry).certificateExpiry(
            CertificateExpiry(app: "com.example.app", environment: "production", notAfter: Date(timeIntervalSince1970: 1_800_000_000)))
        let text = registry.emitToString()
        #expect(text.contains("# TYPE herald_apns_certificate_expiry_timestamp_seconds gauge"))
        #expect(text.contains(#"herald_apns_certificate_expiry_timestamp_seconds{app="com.example.app",environment="production"} 1800000000"#), "\(text)")
    }
}

@Suite("herald doctor's checks in herald serve", .timeLimit(.minutes(2)))
struct DoctorInServeTests {
    @Test("at start the checks are logged, a certificate's expiry is exported and the overview shows the report")
    func atStart() async throws {
        let capture = LogCapture()
        let notAfter = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 10 * 86_400).rounded(.down))
        let pem = try APNSTestCertificate.make(topic: "com.example.cert", notAfter: notAfter)
        try await ServerHarness.withServer(
            logger: capture.logger(),
            configure: {
                $0.apps.append(
                    AppConfiguration(
                        bundleID: "com.example.cert", credentials: .certificate(chainPEM: pem.certificate, privateKeyPEM: pem.key)))
            }
        ) { client, app in
            let summary = try await capture.waitForLine { $0.contains("Deployment checks, as herald doctor runs them") }
            #expect(summary.contains("1 warning, 0 failures"), "\(summary)")
            #expect(capture.all.contains { $0.contains("Deployment check credentials com.example.cert (warning)") && $0.contains("expires in") })
            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains(
                    #"herald_apns_certificate_expiry_timestamp_seconds{app="com.example.cert",environment="production"} \#(Int(notAfter.timeIntervalSince1970))"#),
                "\(metrics.body)")
            let secret = try await app.store.createAPIKey(name: "ops", scopes: [.admin]).secret.value
            var browser = ConsoleClient(client)
            try await browser.signIn(secret)
            let overview = try await browser.call(.get, "/console")
            #expect(overview.body.contains("credentials com.example.cert") && overview.body.contains("badge warn"))
        }
    }
}
