import Foundation
import HeraldTesting
import Testing

/// What the console's browser tests share: whether they run, `herald serve` as its own process for them, its
/// sign-in link, and where scripts and screenshots are.
enum BrowserHarness {
    static let chromium = ProcessInfo.processInfo.environment["HERALD_CHROMIUM"] ?? "/usr/bin/chromium"
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false

    static func browserAvailable() async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: chromium) else { return false }
        return (try? await ProcessRunner.run("python3", ["-c", "import playwright.sync_api"]).status) == 0
    }

    /// The trait of every browser test: skipped without chromium or Playwright, unless CI is set (CI must run them).
    static let needsBrowser: ConditionTrait = .enabled(
        "chromium or Playwright is missing: apt-get install chromium && pip install playwright (CI runs these tests)"
    ) {
        if isCI { return true }
        return await browserAvailable()
    }

    /// Fails the test when CI is set but the browser is missing (``needsBrowser`` let it run).
    static func requireBrowser() async throws {
        try #require(
            await browserAvailable(),
            "CI is set but \(chromium) or Python's playwright is missing: .ci/run installs them (apt-get install chromium; pip install playwright)"
        )
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../..").standardized
    /// Where the scripts keep their screenshots: `.build/console-screenshots/`, or `HERALD_TEST_SCREENSHOTS` when set
    /// (scripts/repeat-tests.sh gives each run its own, since a run deletes its old screenshots before taking them).
    static let screenshots = ProcessInfo.processInfo.environment["HERALD_TEST_SCREENSHOTS"].map {
        URL(fileURLWithPath: $0)
    } ?? packageRoot.appendingPathComponent(".build/console-screenshots")

    /// A Python script beside these tests.
    static func script(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Runs `herald serve` in a temporary directory (the emulator, no rate limit, notices logged) for `body`, and ends
    /// it afterwards.
    /// - Parameter environment: More variables, given the directory (for files put there first).
    static func withServe(
        _ name: String, environment: (URL) throws -> [String: String] = { _ in [:] },
        _ body: (ServeProcess) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(name)-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let common = [
            "HERALD_RATE_LIMIT": "0", "HERALD_EMULATOR_ADMIN_PORT": "off", "HERALD_LOG_LEVEL": "notice",
            "HERALD_EMULATOR_CA_FILE": directory.appendingPathComponent("ca.pem").path,
        ]
        let server = try await ServeProcess.start(
            in: directory, environment: common.merging(try environment(directory)) { $1 })
        try await withCleanup({ _ = await server.terminate() }) { try await body(server) }
    }

    /// A scenario of a flow script (its first argument) and the screenshots it takes.
    struct Scenario: Sendable, CustomTestStringConvertible {
        let name: String
        let screenshots: [String]

        var testDescription: String { name }
    }

    /// The scenarios a flow script lists with `--list`, in its order.
    static func listedScenarios(of script: String) async throws -> [String] {
        let listed = try await ProcessRunner.run("python3", [Self.script(script).path, "--list"])
        try #require(listed.status == 0, "\(script) --list failed: \(listed.standardError)")
        return listed.standardOutput.split(separator: "\n").map(String.init)
    }

    /// Signs in to `server` through a flow script: runs `python3 script [leading…] <base URL> <sign-in link>
    /// <screenshots directory> [trailing…]` after deleting the screenshots it should take, and expects it to end well
    /// and to have taken each one.
    /// - Parameters:
    ///   - what: What the script does, for the failure message.
    ///   - failureScreenshot: The screenshot the script saves when it fails, if it saves one.
    static func runFlows(
        _ script: String, on server: ServeProcess, leading: [String] = [], trailing: [String] = [],
        screenshots expected: [String], what: String, failureScreenshot: String? = nil
    ) async throws {
        let link = try await signInLink(server)
        for name in expected {
            try? FileManager.default.removeItem(at: screenshots.appendingPathComponent(name + ".png"))
        }
        let result = try await ProcessRunner.run(
            "python3",
            [Self.script(script).path] + leading + ["http://127.0.0.1:\(server.port)", link, screenshots.path] + trailing)
        #expect(
            result.status == 0,
            "\(what) failed\(failureScreenshot.map { " (screenshot: \($0))" } ?? ""):\n\(result.standardOutput)\n\(result.standardError.suffix(4000))")
        for name in expected {
            #expect(
                FileManager.default.fileExists(atPath: screenshots.appendingPathComponent(name + ".png").path),
                "screenshot \(name)")
        }
    }

    /// The path of the one-time sign-in link `herald serve` prints at start.
    static func signInLink(_ server: ServeProcess) async throws -> String {
        let log = try #require(
            await server.process.standardOutput.wait { $0.contains("/console/sign-in/") },
            "herald serve ended without printing its sign-in link: \(server.process.standardOutput.text)")
        return try #require(
            log.split(separator: " ").first { $0.contains("/console/sign-in/") }.map {
                "/console/sign-in/" + $0.components(separatedBy: "/console/sign-in/")[1]
            })
    }
}
