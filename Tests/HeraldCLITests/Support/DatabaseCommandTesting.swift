import ArgumentParser
import Foundation
import HeraldTesting
@testable import HeraldCLI

/// Tests of a `herald` command that acts on a database: `run` parses and runs it in this process, as the binary would,
/// on the test's database.
protocol DatabaseCommandTesting {
    /// The command under test, such as `keys`.
    static var command: String { get }
    /// The database its subcommands act on (`--database-url`).
    var url: String { get }
    /// The server's configuration file the subcommands read the apps from (`--config`); `nil`: none, so the server's
    /// one default app.
    var configuration: String? { get }
}

extension DatabaseCommandTesting {
    var configuration: String? { nil }

    /// Runs `herald <command> <arguments> --database-url <url>` (and `--config <configuration>`).
    func run(_ arguments: [String]) async throws {
        let config = configuration.map { ["--config", $0] } ?? []
        var command = try Herald.parseAsRoot([Self.command] + arguments + ["--database-url", url] + config)
        if var asynchronous = command as? any AsyncParsableCommand {
            try await asynchronous.run()
        } else {
            try command.run()
        }
    }
}

/// A server configuration file serving these apps (no credentials: the server would send to its emulator), for the
/// commands that check the apps they are given against the server's.
func configurationFile(servingApps apps: [String], in directory: TemporaryDirectory) throws -> String {
    let path = directory.url.appendingPathComponent("herald.json").path
    let entries = apps.map { #"{"topic": "\#($0)"}"# }.joined(separator: ", ")
    try Data(#"{"apps": [\#(entries)]}"#.utf8).write(to: URL(fileURLWithPath: path))
    return path
}
