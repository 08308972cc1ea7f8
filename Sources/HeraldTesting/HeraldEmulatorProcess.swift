import Foundation

/// The built `herald emulator` running as its own process, for tests of the command line and of outside clients.
public final class HeraldEmulatorProcess: Sendable {
    public let process: ChildProcess
    /// Everything it printed up to the moment it was ready (its headline and any `--device` lines).
    public let output: String
    /// The "APNs emulator: …" line.
    public let headline: String

    /// Puts every listener (device pushes, broadcasts, channel management, web push, admin) on a port the system picks, so
    /// tests never collide with each other or with an emulator already running on the default ports.
    public static let freePorts = [
        "--production-port", "0", "--development-port", "0", "--admin-port", "0",
        "--broadcast-production-port", "0", "--broadcast-development-port", "0",
        "--channels-production-port", "0", "--channels-development-port", "0", "--web-push-port", "0",
    ]

    /// Starts `herald emulator` with `arguments` and waits until it printed its headline and one line per `--device`.
    /// - Throws: when the binary is missing (build the `herald` product first) or the emulator exits early.
    public init(arguments: [String]) async throws {
        let binary = ProcessRunner.productsDirectory.appendingPathComponent("herald")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw HeraldEmulatorProcessError(message: "No herald binary at \(binary.path): build the herald product first (swift build).")
        }
        process = try ChildProcess(binary.path, ["emulator"] + arguments, standardError: .discard)
        let devices = arguments.filter { $0 == "--device" }.count
        let ready = await process.standardOutput.wait { text in
            text.contains("APNs emulator:") && text.components(separatedBy: "\ndevice ").count > devices && text.hasSuffix("\n")
        }
        guard let ready else {
            process.signal(SIGKILL)
            throw HeraldEmulatorProcessError(message: "herald emulator exited early: \(process.standardOutput.text)")
        }
        output = ready
        headline = ready.split(separator: "\n").first { $0.hasPrefix("APNs emulator:") }.map(String.init) ?? ""
    }

    /// The port the headline names for `production`, `development`, `admin`, `broadcast development`, `channels
    /// production`…
    public func port(_ label: String) -> Int? {
        guard let range = headline.range(of: "\(label) http") else { return nil }
        let rest = headline[range.upperBound...].drop { $0 != ":" }.dropFirst().drop { $0 != ":" }.dropFirst()
        return Int(rest.prefix { $0.isNumber })
    }

    /// Sends SIGTERM and waits; returns the exit status.
    @discardableResult
    public func stop() async -> Int32 {
        process.signal()
        return await process.exit().status
    }

    deinit { process.signal(SIGKILL) }
}

public struct HeraldEmulatorProcessError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
