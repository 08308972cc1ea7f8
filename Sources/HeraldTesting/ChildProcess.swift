public import Foundation
import HeraldCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The children that have not ended, by process id (each leads its own process group).
private let runningChildren = Mutex<Set<pid_t>>([])

/// Kills the process group of every child still running when the test process exits. A test that ends without
/// stopping its child (its time limit tripped while it waited on something else) would otherwise leave a server or an
/// emulator running after the run, reparented to init, as a loaded run once did.
private let killsRunningChildrenAtExit: Void = {
    atexit {
        for pid in runningChildren.withLock({ $0 }) { kill(-pid, SIGKILL) }
    }
}()

/// An outside program (curl, python3, nginx, the built `herald`) started by a test, without Foundation's `Process`.
///
/// Foundation's `Process` on Linux is not safe in a test process that runs many servers in parallel:
/// - `run()` lists `/proc/self/fd` to close every descriptor in the child and reads each directory entry as a whole
///   `dirent`, past the end of the short ones; with thousands of descriptors open, the last entry can end a page and
///   the read crashes the test process (SIGSEGV in `findMaximumOpenFromProcSelfFD`, seen under load).
/// - `waitUntilExit()` and reading a pipe to its end block a thread of Swift's cooperative pool, which has as many
///   threads as the machine has cores: two tests doing it at once, each waiting for a child that talks to a server in
///   the same process, would leave no thread to run those servers.
///
/// Here the child is started with `posix_spawn`: descriptors it should not inherit are closed (`closefrom`, and every
/// pipe is made close-on-exec), it starts with an empty signal mask and default signal actions (a test process may
/// block SIGTERM), and in its own process group. Its output is read and its exit awaited on threads of their own, so
/// `async` callers suspend instead of blocking.
public final class ChildProcess: Sendable {
    /// What becomes of the child's standard output or standard error.
    public enum Output: Sendable {
        /// Kept, readable with ``standardOutput`` / ``standardError``.
        case capture
        /// Sent to `/dev/null`.
        case discard
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or the signal number for a child a signal ended (as Foundation's `terminationStatus`).
        public var status: Int32 {
            switch self {
            case .exited(let code), .signalled(let code): code
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signalled(let signal): "ended by signal \(signal)"
            }
        }
    }

    public let processIdentifier: pid_t
    /// Everything the child wrote to its standard output so far (empty when it was discarded).
    public let standardOutput: CapturedOutput
    /// Everything the child wrote to its standard error so far (empty when it was discarded).
    public let standardError: CapturedOutput
    private let termination = OneShot<Termination>()

    /// Starts `executable` (a path, or a program name looked up on `PATH`) with `arguments`.
    /// - Parameters:
    ///   - environment: the child's whole environment; `nil` inherits the test process's.
    ///   - directory: the child's working directory; `nil` keeps the test process's.
    /// - Throws: ``ChildProcessError`` when the program cannot be started.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        standardOutput: Output = .capture, standardError: Output = .capture
    ) throws(ChildProcessError) {
        let outputPipe = standardOutput == .capture ? try Self.makePipe() : nil
        let errorPipe = standardError == .capture ? try Self.makePipe() : nil
        let pid: pid_t
        do {
            pid = try Self.spawn(
                executable, arguments, environment: environment, directory: directory, output: outputPipe?.write,
                error: errorPipe?.write)
        } catch {
            for descriptor in [outputPipe?.read, outputPipe?.write, errorPipe?.read, errorPipe?.write] {
                if let descriptor { close(descriptor) }
            }
            throw error
        }
        // The child has its copies; ours would keep the pipes open after it exits.
        if let outputPipe { close(outputPipe.write) }
        if let errorPipe { close(errorPipe.write) }
        processIdentifier = pid
        _ = killsRunningChildrenAtExit
        runningChildren.withLock { _ = $0.insert(pid) }
        self.standardOutput = CapturedOutput(reading: outputPipe?.read, of: pid)
        self.standardError = CapturedOutput(reading: errorPipe?.read, of: pid)
        let termination = self.termination
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 {
                guard errno == EINTR else {
                    termination.fulfil(.exited(-1))
                    return
                }
            }
            runningChildren.withLock { _ = $0.remove(pid) }
            let signal = status & 0x7F
            termination.fulfil(signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal))
        }
    }

    /// Sends `signal` (SIGTERM by default) to the child, if it still runs.
    public func signal(_ signal: Int32 = SIGTERM) {
        if termination.value == nil { kill(processIdentifier, signal) }
    }

    /// Whether the child has not ended yet (or has not been reaped: a moment after it ends).
    public var isRunning: Bool { termination.value == nil }

    /// Waits for the child to end. A cancelled wait (a test's time limit) kills the child, so it still returns.
    public func exit() async -> Termination {
        let pid = processIdentifier
        return await withTaskCancellationHandler {
            await termination.waitEvenIfCancelled()
        } onCancel: { [termination] in
            if termination.value == nil { kill(pid, SIGKILL) }
        }
    }

    // MARK: Spawning

    private static func makePipe() throws(ChildProcessError) -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { throw ChildProcessError("pipe failed: \(String(cString: strerror(errno)))") }
        // Close-on-exec at once (Swift's Glibc module has no pipe2); closefrom covers a child spawned in between.
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return (descriptors[0], descriptors[1])
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// glibc's extensions (2.34 and 2.29), looked up at run time because Swift's Glibc module does not declare them.
    private static func extensionFunction<Function>(_ name: String, as type: Function.Type) -> Function? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }

    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]?, directory: String?, output: Int32?,
        error: Int32?
    ) throws(ChildProcessError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output { posix_spawn_file_actions_adddup2(&actions, output, 1) } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if let error { posix_spawn_file_actions_adddup2(&actions, error, 2) } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // Descriptors opened without close-on-exec by libraries (or by a test) stay out of the child.
        if let closeFrom = extensionFunction("posix_spawn_file_actions_addclosefrom_np", as: CloseFrom.self) {
            _ = closeFrom(&actions, 3)
        }
        if let directory {
            guard let addChdir = extensionFunction("posix_spawn_file_actions_addchdir_np", as: AddChdir.self) else {
                throw ChildProcessError("this C library cannot start a program in another directory (\(directory))")
            }
            _ = addChdir(&actions, directory)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let environmentLines = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp = environmentLines.map { strdup($0) } + [nil]
        defer { for line in envp { free(line) } }

        var pid: pid_t = 0
        let result =
            executable.contains("/")
            ? posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            : posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw ChildProcessError("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }
}

extension ChildProcess {
    /// Everything a child wrote to one of its outputs, read on a thread of its own until the child closes it.
    public final class CapturedOutput: Sendable {
        private let bytes = Mutex<[UInt8]>([])
        private let changes = OutputSignal()
        private let processIdentifier: pid_t

        init(reading descriptor: Int32?, of processIdentifier: pid_t) {
            self.processIdentifier = processIdentifier
            guard let descriptor else {
                changes.finish()
                return
            }
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count > 0 {
                        self.bytes.withLock { $0.append(contentsOf: buffer[0..<count]) }
                        changes.signal()
                    } else if count == 0 || errno != EINTR {
                        break
                    }
                }
                close(descriptor)
                changes.finish()
            }
        }

        /// What was written so far, as UTF-8 text.
        public var text: String { String(decoding: bytes.withLock { $0 }, as: UTF8.self) }

        /// Waits until the text written so far satisfies `condition` or the output ends, and returns the text.
        ///
        /// A cancelled wait (a test's time limit) returns `nil` at once and kills the child, which would otherwise run on.
        /// - Returns: `nil` when the output ended (the child closed it, or exited) without satisfying `condition`, or
        ///   the wait was cancelled.
        public func wait(until condition: (String) -> Bool) async -> String? {
            let pid = processIdentifier
            return await withTaskCancellationHandler {
                while true {
                    let (generation, ended) = changes.snapshot
                    let text = self.text
                    if condition(text) { return text }
                    if ended || Task.isCancelled { return nil }
                    await changes.wait(after: generation)
                }
            } onCancel: {
                kill(pid, SIGKILL)
            }
        }

        /// Waits until the child closes this output (usually when it exits) and returns all of it.
        public func all() async -> String {
            await wait { _ in false } ?? text
        }
    }
}

/// Counts the chunks an output reader appended, and says when it reached the end, to `async` waiters.
final class OutputSignal: Sendable {
    private let state = WatchedState((generation: 0, finished: false), readyWhen: { _ in false })

    /// The number of chunks so far and whether the output ended.
    var snapshot: (generation: Int, finished: Bool) { state.value }

    func signal() { state.update { $0.generation += 1 } }

    func finish() { state.update { $0.finished = true } }

    /// Returns once there was a chunk after `generation`, the output ended, or the task is cancelled.
    func wait(after generation: Int) async {
        await state.wait(until: { $0.generation != generation || $0.finished })
    }
}

/// A program a test needed could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
