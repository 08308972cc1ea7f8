import Foundation
import HeraldTesting
import Testing

/// `herald serve` started as its own process on a free loopback port, with its standard output captured.
struct ServeProcess {
    let process: ChildProcess
    /// What it printed up to "Herald is listening on".
    let startLog: String
    let port: Int

    /// Starts `herald serve` in `directory` with the given `HERALD_*` settings (listening on any free port) and returns
    /// once it listens.
    static func start(in directory: URL, environment settings: [String: String]) async throws -> ServeProcess {
        let binary = ProcessRunner.productsDirectory.appendingPathComponent("herald")
        try #require(
            FileManager.default.isExecutableFile(atPath: binary.path), "build the herald product first (swift build)")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment["HERALD_LISTEN"] = "127.0.0.1:0"
        environment.merge(settings) { $1 }
        let process = try ChildProcess(
            binary.path, ["serve"], environment: environment, directory: directory.path, standardError: .discard)
        let started = await process.standardOutput.wait { $0.contains("Herald is listening on") && $0.hasSuffix("\n") }
        guard let text = started else {
            process.signal(SIGKILL)
            try #require(Bool(false), "herald serve exited early: \(process.standardOutput.text)")
            throw CancellationError()
        }
        let listening = try #require(text.split(separator: "\n").first { $0.contains("Herald is listening on") })
        let port = try #require(
            listening.components(separatedBy: "http://127.0.0.1:").last.flatMap { Int($0.prefix { $0.isNumber }) })
        return ServeProcess(process: process, startLog: text, port: port)
    }

    /// Sends SIGTERM and waits for the process to exit; returns the rest of its output.
    func terminate() async -> String {
        process.signal()
        _ = await process.exit()
        let all = await process.standardOutput.all()
        return String(all.dropFirst(startLog.count))
    }
}
