import Foundation
import HeraldTesting
import Testing

/// `herald serve` started as its own process on a free loopback port, with its standard output captured.
struct ServeProcess {
    let process: Process
    let output: Pipe
    /// What it printed up to "Herald is listening on".
    let startLog: String
    let port: Int

    /// Starts `herald serve` in `directory` with the given `HERALD_*` settings (listening on any free port) and returns
    /// once it listens.
    static func start(in directory: URL, environment settings: [String: String]) throws -> ServeProcess {
        let binary = ProcessRunner.productsDirectory.appendingPathComponent("herald")
        try #require(
            FileManager.default.isExecutableFile(atPath: binary.path), "build the herald product first (swift build)")
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve"]
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment["HERALD_LISTEN"] = "127.0.0.1:0"
        environment.merge(settings) { $1 }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.contains("Herald is listening on") || !text.hasSuffix("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                process.terminate()
                try #require(Bool(false), "herald serve exited early: \(text)")
            }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let listening = try #require(text.split(separator: "\n").first { $0.contains("Herald is listening on") })
        let port = try #require(
            listening.components(separatedBy: "http://127.0.0.1:").last.flatMap { Int($0.prefix { $0.isNumber }) })
        return ServeProcess(process: process, output: output, startLog: text, port: port)
    }

    /// Sends SIGTERM and waits for the process to exit; returns the rest of its output.
    func terminate() -> String {
        process.terminate()
        process.waitUntilExit()
        return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }
}
