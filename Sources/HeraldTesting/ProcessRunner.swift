public import Foundation

/// Runs outside programs (curl, python3, the built `herald`) from tests, capturing their output.
public enum ProcessRunner {
    public struct Result: Sendable {
        public let status: Int32
        public let standardOutput: String
        public let standardError: String
    }

    /// Runs a program found on `PATH` to completion. Meant for programs with small outputs (under 64 KB on
    /// standard error), which is what tests run.
    public static func run(_ program: String, _ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outputData = output.fileHandleForReading.readToEndRetryingInterrupts()
        let errorData = errors.fileHandleForReading.readToEndRetryingInterrupts()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
                      standardError: String(decoding: errorData, as: UTF8.self))
    }

    /// The folder holding the built products (`herald`), found from the running test bundle.
    public static var productsDirectory: URL {
        var url = Bundle.main.bundleURL
        if url.pathExtension == "xctest" { url.deleteLastPathComponent() }
        return url
    }

    /// The Python helper that makes and checks ES256 JWTs outside Herald (Tests/Fixtures/jwt_interop.py).
    public static func jwtScript(relativeTo testFile: String) -> URL {
        var url = URL(fileURLWithPath: testFile).deletingLastPathComponent()
        while url.path != "/" && url.lastPathComponent != "Tests" { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Fixtures/jwt_interop.py")
    }
}
