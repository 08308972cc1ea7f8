public import Foundation
public import Logging

/// A swift-log handler that writes one line per event, in swift-log's `StreamLogHandler` format:
/// `2026-11-24T16:00:00+0000 info herald: key=value … [source] message`, metadata sorted by key.
///
/// `StreamLogHandler` formats its metadata again every time a key is set, logged or not. The server sets keys on
/// every request (Hummingbird's request id, the API key, the send id) and logs at `info` few of them, so that was a
/// few percent of a one-device send's CPU. This handler formats metadata only for a line it writes.
public struct TextLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: @Sendable (String) -> Void
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - label: The logger's label.
    ///   - metadataProvider: Metadata added to every line (swift-log's, for example from task-local values).
    ///   - output: Where each line goes, without its newline; standard output, unbuffered, by default.
    ///   - now: The time a line is stamped with.
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        output: @escaping @Sendable (String) -> Void = JSONLogHandler.standardOutput,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.output = output
        self.now = now
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, provided in provided }
        }
        if let explicit = event.metadata, !explicit.isEmpty {
            merged.merge(explicit) { _, explicit in explicit }
        }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = Self.timestamp(now())
        line += " \(event.level)"
        if !label.isEmpty { line += " \(label)" }
        line += ":"
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) { line += " \(key)=\(value)" }
        line += " [\(event.source)] \(event.message)"
        output(line)
    }

    /// Local time to the second with its offset, as `StreamLogHandler` writes it: `2026-11-24T16:00:00+0000`.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var local = tm()
        guard localtime_r(&seconds, &local) != nil else { return "<unknown>" }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let count = strftime(buffer.baseAddress!, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: count), as: UTF8.self)
        }
    }
}
