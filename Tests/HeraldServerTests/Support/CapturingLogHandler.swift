import Logging
import Synchronization

/// Collects every log line (message and metadata) in memory, for tests that check what the server logs.
final class LogCapture: Sendable {
    private struct Waiter {
        let matches: @Sendable (String) -> Bool
        let continuation: CheckedContinuation<String, Never>
    }

    private let lines = Mutex<[String]>([])
    private let waiters = Mutex<[Waiter]>([])

    var all: [String] { lines.withLock { $0 } }

    func append(_ line: String) {
        lines.withLock { $0.append(line) }
        let ready = waiters.withLock { waiters in
            let ready = waiters.filter { $0.matches(line) }
            waiters.removeAll { $0.matches(line) }
            return ready
        }
        for waiter in ready { waiter.continuation.resume(returning: line) }
    }

    /// Returns the first line (logged before or after the call) that `matches` accepts.
    func waitForLine(where matches: @escaping @Sendable (String) -> Bool) async -> String {
        await withCheckedContinuation { continuation in
            let found: String? = waiters.withLock { waiters in
                if let line = lines.withLock({ $0.first(where: matches) }) { return line }
                waiters.append(Waiter(matches: matches, continuation: continuation))
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// A logger that writes here at every level.
    func logger(label: String = "herald.test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.append(
                "\(event.level) \(event.message) \(merged.map { "\($0)=\($1)" }.sorted().joined(separator: " "))")
        }
    }
}
