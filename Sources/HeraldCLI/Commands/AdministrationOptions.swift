import ArgumentParser
import Foundation
import HeraldServer
import Logging

/// `--config` and `--database-url`, for the commands that change what the server serves (`herald keys`, `herald
/// webhooks`, `herald tokens add|remove`): they act through the server's use cases, which check what they are given
/// against the apps its configuration serves.
struct AdministrationOptions: ParsableArguments {
    @Option(help: "The server's JSON configuration file (instead of HERALD_CONFIG): the apps it serves, its database.")
    var config: String?
    @OptionGroup var database: DatabaseOptions

    /// The server's configuration (the variables and the file `herald serve` reads), its store opened and migrated,
    /// and the use cases over them; an ``APIError`` (what the API would refuse) is printed and exits with status 1.
    func withAdministration<Result: Sendable>(
        _ body: @Sendable (CommandLineAdministration) async throws -> Result
    ) async throws -> Result {
        let configuration = try configuration()
        return try await DatabaseOptions.withStore(url: configuration.databaseURL) { store in
            var logger = Logger(label: "herald.cli")
            // The use cases' notices ("Created an API key") would repeat what the command prints.
            logger.logLevel = .warning
            let administration = CommandLineAdministration(
                configuration: configuration, store: store, user: Self.user, logger: logger)
            do {
                return try await body(administration)
            } catch let error as APIError {
                Output.error(error.message)
                throw ExitCode(1)
            }
        }
    }

    /// What `herald serve` would read with these options.
    func configuration() throws -> ServerConfiguration {
        let environment = ServeCommand.environment(config: config, listen: nil, databaseURL: database.databaseURL)
        do {
            return try ServerConfiguration(environment: environment)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// Who runs the command, for the audit log.
    static var user: String { ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "unknown user" }
}
