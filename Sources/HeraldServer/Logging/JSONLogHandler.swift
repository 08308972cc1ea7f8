import Foundation
import HeraldCore
public import Logging
import Synchronization

/// A swift-log handler that writes one JSON object per line: `time`, `level`, `label`, `message` and the metadata.
///
/// For log collectors (`HERALD_LOG_FORMAT=json`). Whatever the format, Herald's own log lines carry no full token,
/// key, JWT or API key; this handler writes what it is given.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let output: @Sendable (String) -> Void

    /// - Parameters:
    ///   - label: The logger's label.
    ///   - output: Where each line goes; standard output by default.
    public init(label: String, output: @escaping @Sendable (String) -> Void = JSONLogHandler.standardOutput) {
        self.label = label
        self.output = output
    }

    /// Writes a line to standard output at once (unbuffered), so a supervisor or a test sees it immediately.
    public static let standardOutput: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: JSONValue] = [
            "time": .string(Date().formatted(.iso8601)),
            "level": .string(event.level.rawValue),
            "label": .string(label),
            "message": .string("\(event.message)"),
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for (key, value) in merged { fields[key] = Self.json(value) }
        output(JSONValue.object(fields).jsonString)
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }
}
