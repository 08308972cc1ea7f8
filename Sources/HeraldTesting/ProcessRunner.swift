public import Foundation

/// Runs outside programs (curl, python3, the built `herald`) from tests, capturing their output.
public enum ProcessRunner {
    public struct Result: Sendable {
        public let status: Int32
        public let standardOutput: String
        public let standardError: String
    }

    /// Runs a program (a path, or a name found on `PATH`) to completion and returns its status and output, suspending
    /// rather than blocking while it runs (see ``ChildProcess``).
    public static func run(_ program: String, _ arguments: [String]) async throws -> Result {
        let child = try ChildProcess(program, arguments)
        async let output = child.standardOutput.all()
        async let errors = child.standardError.all()
        let (standardOutput, standardError) = await (output, errors)
        let termination = await child.exit()
        return Result(status: termination.status, standardOutput: standardOutput, standardError: standardError)
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
