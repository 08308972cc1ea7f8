import Foundation
import HeraldTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The test support that starts outside programs: it must neither block Swift's cooperative pool nor hand the test
/// process's descriptors to its children.
@Suite("Test support: child processes", .timeLimit(.minutes(1)))
struct ChildProcessTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws {
        temporary = try TemporaryDirectory(prefix: "herald-child")
    }

    @Test("more children than the cooperative pool has threads all run at once: waiting for one suspends, never blocks")
    func waitingSuspends() async throws {
        // Each child says it started, then waits for a flag that this test writes only once every child has
        // started. A runner that blocked a pool thread per child would leave no thread to write the flag after the
        // first few, and the test would never end.
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let flag = directory.appendingPathComponent("go").path
        try await withThrowingTaskGroup(of: ProcessRunner.Result.self) { group in
            for index in 0..<count {
                let started = directory.appendingPathComponent("started-\(index)").path
                group.addTask {
                    try await ProcessRunner.run(
                        "sh", ["-c", "touch '\(started)'; while [ ! -e '\(flag)' ]; do sleep 0.02; done; echo child \(index)"])
                }
            }
            while try FileManager.default.contentsOfDirectory(atPath: directory.path).count < count {
                try await Task.sleep(for: .milliseconds(20))
            }
            _ = FileManager.default.createFile(atPath: flag, contents: nil)
            var outputs: [String] = []
            for try await result in group {
                #expect(result.status == 0)
                outputs.append(result.standardOutput)
            }
            #expect(Set(outputs) == Set((0..<count).map { "child \($0)\n" }))
        }
    }

    @Test("a child gets standard input, output and error only, even while the test holds thousands of descriptors")
    func descriptorsStayOut() async throws {
        // Descriptors opened without close-on-exec, as a library might, and enough of them that /proc/self/fd is long.
        let held = (0..<3000).map { _ in open("/dev/null", O_RDONLY) }
        defer { for descriptor in held where descriptor >= 0 { close(descriptor) } }
        #expect(held.allSatisfy { $0 >= 0 })
        let result = try await ProcessRunner.run("sh", ["-c", "ls /proc/$$/fd"])
        #expect(result.status == 0, "\(result.standardError)")
        let inherited = Set(result.standardOutput.split(separator: "\n").compactMap { Int($0) })
        #expect(inherited == [0, 1, 2], "\(inherited.sorted())")
    }

    @Test("output is captured whole, the status and the signal that ended a child are reported")
    func statusAndOutput() async throws {
        let big = try await ProcessRunner.run("sh", ["-c", "head -c 300000 /dev/zero | tr '\\\\0' a; echo err >&2; exit 3"])
        #expect(big.status == 3 && big.standardOutput.count == 300_000 && big.standardError == "err\n")
        let child = try ChildProcess("sleep", ["30"])
        #expect(child.isRunning)
        child.signal(SIGTERM)
        #expect(await child.exit() == .signalled(SIGTERM))
        #expect(throws: ChildProcessError.self) { try ChildProcess("/nonexistent/program", []) }
    }

    @Test("a cancelled wait kills the child, so a test's time limit still ends it")
    func cancellationKills() async throws {
        let child = try ChildProcess("sleep", ["30"])
        let waiting = Task { await child.exit() }
        waiting.cancel()
        #expect(await waiting.value == .signalled(SIGKILL))
    }

    // Hung before: a cancelled wait killed the child and waited for its output to end, which a grandchild holding the
    // pipe kept open for as long as it ran.
    @Test("a cancelled wait for output returns at once, even while a grandchild keeps the output open",
          .timeLimit(.minutes(1)))
    func cancelledOutputWait() async throws {
        let child = try ChildProcess("sh", ["-c", "sleep 600 & echo started; wait"])
        defer { kill(-child.processIdentifier, SIGKILL) }
        #expect(await child.standardOutput.wait { $0.contains("started") } != nil)
        let waiting = Task { await child.standardOutput.wait { $0.contains("never printed") } }
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(await child.exit() == .signalled(SIGKILL), "the cancelled wait killed the child")
    }

    @Test("a child still running when the test process exits is killed, with its process group")
    func childrenDieWithTheTestProcess() async throws {
        // This test binary runs again with only the probe below, which starts a child, writes its process id and
        // returns without stopping it. Once that run has exited, the child must be gone.
        let file = directory.appendingPathComponent("pid").path
        let run = try ChildProcess(
            "/proc/self/exe".resolvingSymlinks, ["--testing-library", "swift-testing", "--filter", "leftBehindProbe"],
            environment: ProcessInfo.processInfo.environment.merging(["HERALD_LEFT_BEHIND_PID_FILE": file]) { $1 })
        let output = await run.standardOutput.all()
        #expect(await run.exit() == .exited(0), "\(output)\(run.standardError.text)")
        let pid = try #require(pid_t(String(contentsOfFile: file, encoding: .utf8)))
        var gone = false
        for _ in 0..<100 where !gone {
            gone = kill(pid, 0) == -1 && errno == ESRCH
            if !gone { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(gone, "the child \(pid) outlived the test process")
        if !gone { kill(pid, SIGKILL) }
    }

    @Test(
        "probe: leaves a child running (only in the run the test above starts)",
        .enabled(if: ProcessInfo.processInfo.environment["HERALD_LEFT_BEHIND_PID_FILE"] != nil))
    func leftBehindProbe() throws {
        let child = try ChildProcess("sleep", ["300"], standardOutput: .discard, standardError: .discard)
        let file = try #require(ProcessInfo.processInfo.environment["HERALD_LEFT_BEHIND_PID_FILE"])
        try String(child.processIdentifier).write(toFile: file, atomically: true, encoding: .utf8)
    }
}

extension String {
    /// The path a symbolic link (such as `/proc/self/exe`) points to.
    fileprivate var resolvingSymlinks: String { (try? FileManager.default.destinationOfSymbolicLink(atPath: self)) ?? self }
}
