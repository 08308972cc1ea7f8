public import HeraldCore

/// Why a store operation failed, with a message that says what to do.
///
/// `description` is safe to log and to show a person: it never contains a full device token, an API key secret or a
/// provider token (tokens appear as ``HeraldCore/DeviceToken/redacted``). The underlying driver error, which may
/// quote SQL, is kept in ``underlying`` and shown only by `debugDescription`.
public struct StoreError: CodedError, CustomDebugStringConvertible {
    /// What kind of failure this is, for callers that branch on it. New codes may be added.
    public typealias Code = ErrorCode<StoreError>

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong and what to do, safe to log.
    public let message: String
    /// The driver's error, if any. May contain SQL; not part of `description`.
    public let underlying: (any Error)?
    /// Where the error was raised.
    public let file: String
    /// The line where the error was raised.
    public let line: Int

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A sentence saying what went wrong and what to do. Never include a full token or secret.
    ///   - underlying: The driver error behind it, if any.
    public init(
        _ code: Code, _ message: String, underlying: (any Error)? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    /// Whether the same operation may succeed if tried again once the database is back: it could not be reached, a
    /// connection was lost, it accepts no writes for now (a failover), a statement ran out of time, two transactions
    /// conflicted, or the disk is full. Nothing was stored then, except where ``Code-swift.typealias/commitUnknown``
    /// says the outcome cannot be known. Work that meets such an error waits and tries again (docs/reliability.md,
    /// "When the database is away"); any other error is permanent.
    public var isTransient: Bool { Self.transientCodes.contains(code) }

    /// The codes of ``isTransient`` errors.
    public static let transientCodes: Set<Code> = [
        .unavailable, .readOnly, .timedOut, .conflict, .diskFull, .commitUnknown,
    ]

    public var debugDescription: String {
        var text = "StoreError(\(code)): \(message) [\(file):\(line)]"
        if let underlying { text += " underlying: \(String(reflecting: underlying))" }
        return text
    }
}

extension ErrorCode where Domain == StoreError {
    /// The database URL is malformed or names an unsupported backend.
    public static let invalidURL = Self("invalidURL")
    /// The database cannot be reached or opened.
    public static let unavailable = Self("unavailable")
    /// Applying a schema migration failed; nothing of that migration was kept.
    public static let migrationFailed = Self("migrationFailed")
    /// The database was migrated by a newer Herald than this one.
    public static let schemaTooNew = Self("schemaTooNew")
    /// A value handed to the store is outside its limits (an empty topic, too many tags, …).
    public static let invalidRecord = Self("invalidRecord")
    /// The record the operation needs does not exist.
    public static let notFound = Self("notFound")
    /// A stored row cannot be read back (edited by hand, or written by an incompatible version).
    public static let corruptRecord = Self("corruptRecord")
    /// The store was closed.
    public static let closed = Self("closed")
    /// The database driver reported an error.
    public static let backend = Self("backend")
    /// The database accepts no writes now: a standby, or a primary being demoted in a failover. Transient.
    public static let readOnly = Self("readOnly")
    /// A statement ran past its time limit (the database or the path to it stalled). Transient.
    public static let timedOut = Self("timedOut")
    /// The transaction conflicted with another one (serialization failure, deadlock). Transient: try again.
    public static let conflict = Self("conflict")
    /// The disk under the database is full. Transient: writes succeed again once there is space.
    public static let diskFull = Self("diskFull")
    /// The connection was lost while the database committed: the write may or may not be stored. Transient; a caller
    /// that must know reads it back, or answers that the outcome is unknown.
    public static let commitUnknown = Self("commitUnknown")
}
