import HeraldCore
import Logging

/// Collects every log line (message and metadata) in memory, for tests that check what the server logs.
final class LogCapture: Sendable {
    private let lines = WatchedState<[String]>([], readyWhen: { _ in false })

    var all: [String] { lines.value }

    func append(_ line: String) {
        lines.update { $0.append(line) }
    }

    /// Returns the first line (logged before or after the call) that `matches` accepts.
    /// - Throws: `CancellationError` when the task is cancelled first (a test's time limit).
    func waitForLine(where matches: @escaping @Sendable (String) -> Bool) async throws(CancellationError) -> String {
        guard let line = await lines.wait(until: { $0.contains(where: matches) })?.first(where: matches) else {
            throw CancellationError()
        }
        return line
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
