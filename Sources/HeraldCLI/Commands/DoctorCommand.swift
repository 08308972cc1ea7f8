import ArgumentParser
import HeraldServer

/// `herald doctor`: what a deployment needs, checked before it fails in production.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a deployment: credentials, certificates, trust store, clock, database, listen address.",
        discussion: """
            Reads the configuration herald serve reads (HERALD_* variables, HERALD_CONFIG or --config) and says what \
            to fix. Nothing is sent, created or migrated, and nothing reaches the internet. Exits 1 when a check \
            fails; warnings alone exit 0. --json prints {"checks": [{"name", "status", "message"}, …], "ok"}, \
            status being ok, warning, failure or skipped (docs/operations.md).
            """
    )

    @Option(help: "A JSON configuration file (instead of HERALD_CONFIG).") var config: String?
    @Option(help: "host:port herald serve would listen on (instead of HERALD_LISTEN).") var listen: String?
    @OptionGroup var database: DatabaseOptions
    @Flag(help: "Print the checks as JSON, for machines.") var json = false

    func run() async throws {
        let environment = ServeCommand.environment(config: config, listen: listen, databaseURL: database.databaseURL)
        let report: DeploymentReport
        do {
            report = await Doctor(configuration: try ServerConfiguration(environment: environment)).run()
        } catch {
            report = Doctor.configurationFailed(error.message)
        }
        Output.line(json ? report.json : report.text)
        if report.hasFailure { throw ExitCode(1) }
    }
}
