import ArgumentParser
import Hummingbird

/// `herald hello`: a bare Hummingbird server answering `GET /hello`, the framework's ceiling in the registration
/// benchmark (scripts/bench-server.sh). Hidden: it is a yardstick, not a feature.
struct HelloCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hello",
        abstract: "A bare Hummingbird server answering GET /hello (benchmark yardstick).",
        shouldDisplay: false
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8081

    func run() async throws {
        let router = Router()
        router.get("/hello") { _, _ in "hello" }
        let application = Application(router: router, configuration: .init(address: .hostname(host, port: port)))
        try await application.runService()
    }
}
