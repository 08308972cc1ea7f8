public import Foundation
public import HeraldStore

/// Checks what a deployment needs before it fails in production: each app's credentials, the trust store, the clock,
/// the database and the listen address. `herald doctor` prints the report; `herald serve` runs the same checks at
/// start (all but the listen address) and logs what is not ok, without delaying or stopping its start.
///
/// Nothing here reaches the internet: the clock is compared with PostgreSQL's, and the trust store is read from disk.
/// The database is only read: a missing SQLite file is not created and nothing is migrated.
public struct Doctor: Sendable {
    /// What the checks look at besides the configuration.
    public struct Options: Sendable {
        /// Where the trust store is: NIO SSL's search list on Linux, first existing file wins, then its directory.
        public var trustStoreFiles: [String]
        /// The directory of single certificates NIO SSL also trusts (hashed names, `*.pem`).
        public var trustStoreDirectory: String?
        /// Whether to try binding the listen address (off in `herald serve`, which binds it itself).
        public var checksListenAddress: Bool
        /// A certificate closer to its expiry than this is a warning. Default 30 days.
        public var certificateWarning: TimeInterval
        /// What "now" is: the system clock unless a test says otherwise.
        public var now: @Sendable () -> Date

        /// - Parameters: see the properties; each has its default.
        public init(
            trustStoreFiles: [String] = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"],
            trustStoreDirectory: String? = "/etc/ssl/certs", checksListenAddress: Bool = true,
            certificateWarning: TimeInterval = 30 * 86_400,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.trustStoreFiles = trustStoreFiles
            self.trustStoreDirectory = trustStoreDirectory
            self.checksListenAddress = checksListenAddress
            self.certificateWarning = certificateWarning
            self.now = now
        }
    }

    public let configuration: ServerConfiguration
    public let options: Options

    /// - Parameters: see the properties.
    public init(configuration: ServerConfiguration, options: Options = Options()) {
        self.configuration = configuration
        self.options = options
    }

    /// The report for a configuration that could not be read: one failed check saying why.
    public static func configurationFailed(_ message: String) -> DeploymentReport {
        DeploymentReport(checks: [
            DeploymentCheck("configuration", .failure, message),
            DeploymentCheck(
                "other checks", .skipped, "Not run: they need a configuration that loads. Fix it and run herald doctor again."),
        ])
    }

    /// Runs every check, opening the configured database itself (read only) and closing it after.
    public func run() async -> DeploymentReport {
        var report = offlineChecks()
        report.checks += await databaseChecks()
        if options.checksListenAddress { report.checks.append(await listenCheck()) }
        return report
    }

    /// Runs every check but the listen address against a store that is already running and migrated (the server's).
    public func run(using store: any Store) async -> DeploymentReport {
        var report = offlineChecks()
        report.checks += await databaseChecks(store: store)
        return report
    }

    /// The checks that need no database: credentials of every app, then the trust store.
    func offlineChecks() -> DeploymentReport {
        var checks = [
            destination == .mixed
                ? DeploymentCheck(
                    "configuration", .failure,
                    "Some apps have APNs credentials and some do not, so herald serve refuses to start: give every app a key or certificate, or send to the emulator with HERALD_APNS=emulator.")
                : DeploymentCheck("configuration", .ok, "Read; pushes go to \(destination.description).")
        ]
        var certificates: [CertificateExpiry] = []
        for app in configuration.apps {
            let (check, expiries) = credentialsCheck(app)
            checks.append(check)
            certificates += expiries
        }
        checks.append(trustStoreCheck())
        return DeploymentReport(checks: checks, certificates: certificates)
    }
}

extension Doctor {
    /// Where pushes go, as `herald serve` would decide it, without starting anything.
    enum Destination: Equatable, CustomStringConvertible {
        case apple
        case emulator
        case custom(host: String)
        /// `auto` with some apps that have credentials and some that do not: the server refuses to start.
        case mixed

        var description: String {
            switch self {
            case .apple: "Apple (HERALD_APNS=apple, or auto with every app's credentials)"
            case .emulator: "the in-process APNs emulator"
            case .custom(let host): "\(host) (HERALD_APNS=custom)"
            case .mixed: "nowhere: some apps have credentials and some do not"
            }
        }
    }

    var destination: Destination {
        switch configuration.apns.kind {
        case .apple: return .apple
        case .emulator: return .emulator
        case .custom(let custom): return .custom(host: custom.host)
        case .automatic:
            let withCredentials = configuration.apps.filter { $0.credentials != nil }.count
            if withCredentials == 0 { return .emulator }
            return withCredentials == configuration.apps.count ? .apple : .mixed
        }
    }
}
