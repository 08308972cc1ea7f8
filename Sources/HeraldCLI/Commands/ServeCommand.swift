import ArgumentParser
import Foundation
import HeraldServer
import Hummingbird
import Logging
import Metrics
import Prometheus

/// `herald serve`: the provider server.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the provider server: token registration, the send API, background sends, metrics.",
        discussion: """
            Configured by HERALD_* environment variables, or a JSON file (HERALD_CONFIG or --config): see docs/server.md.
            With no APNs key configured it sends to an APNs emulator inside the process, and says so in its first log line.
            HERALD_LOG_LEVEL (trace…critical, default info) and HERALD_LOG_FORMAT (text or json) shape the log.
            """
    )

    @Option(help: "A JSON configuration file (instead of HERALD_CONFIG).") var config: String?
    @Option(help: "host:port to listen on (instead of HERALD_LISTEN; default 127.0.0.1:8080).") var listen: String?
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let environment = Self.environment(config: config, listen: listen, databaseURL: database.databaseURL)
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(environment: environment)
        } catch {
            throw ValidationError(error.message)
        }
        let level = try Self.logLevel(environment["HERALD_LOG_LEVEL"])
        let json = try Self.isJSONFormat(environment["HERALD_LOG_FORMAT"])
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                json ? JSONLogHandler(label: label) : TextLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let application: HeraldApplication
        do {
            application = try await buildApplication(
                configuration: configuration,
                dependencies: ServerDependencies(logger: Logger(label: "herald"), metrics: registry))
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
        try await application.runService()
    }

    /// The process's environment with the options that stand in for variables applied.
    static func environment(config: String?, listen: String?, databaseURL: String?) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        if let config { environment["HERALD_CONFIG"] = config }
        if let listen { environment["HERALD_LISTEN"] = listen }
        if let databaseURL { environment["HERALD_DATABASE_URL"] = databaseURL }
        return environment
    }

    static func logLevel(_ text: String?) throws -> Logger.Level {
        guard let text, !text.isEmpty else { return .info }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ValidationError(
                "HERALD_LOG_LEVEL is \(text): use trace, debug, info, notice, warning, error or critical.")
        }
        return level
    }

    static func isJSONFormat(_ text: String?) throws -> Bool {
        switch text?.lowercased() {
        case nil, "", "text": false
        case "json": true
        default: throw ValidationError("HERALD_LOG_FORMAT is \(text ?? ""): use text or json.")
        }
    }
}
