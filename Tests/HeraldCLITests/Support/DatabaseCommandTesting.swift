import ArgumentParser
@testable import HeraldCLI

/// Tests of a `herald` command that acts on a database: `run` parses and runs it in this process, as the binary would,
/// on the test's database.
protocol DatabaseCommandTesting {
    /// The command under test, such as `keys`.
    static var command: String { get }
    /// The database its subcommands act on (`--database-url`).
    var url: String { get }
}

extension DatabaseCommandTesting {
    /// Runs `herald <command> <arguments> --database-url <url>`.
    func run(_ arguments: [String]) async throws {
        var command = try Herald.parseAsRoot([Self.command] + arguments + ["--database-url", url])
        if var asynchronous = command as? any AsyncParsableCommand {
            try await asynchronous.run()
        } else {
            try command.run()
        }
    }
}
