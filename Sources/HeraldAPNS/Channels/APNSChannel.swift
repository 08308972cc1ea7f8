public import HeraldCore

/// The id APNs gives a broadcast channel when it creates one: a base64 string of unspecified length, valid in one
/// environment only. Herald checks only that it can travel in a header; APNs (or the emulator) judges the rest
/// (`BadChannelId`, `ChannelNotRegistered`).
public struct APNSChannelID: Sendable, Hashable, CustomStringConvertible {
    /// The id as APNs wrote it in `apns-channel-id`.
    public let rawValue: String

    /// `nil` when `text` is empty, longer than 1,024 bytes, or has characters other than visible ASCII.
    public init?(_ text: some StringProtocol) {
        guard !text.isEmpty, text.utf8.count <= 1024, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        rawValue = String(text)
    }

    public var description: String { rawValue }
}

/// Whether a channel keeps its newest message for devices that are offline; fixed when the channel is created.
public struct APNSMessageStoragePolicy: Sendable, Hashable, CustomStringConvertible {
    private enum Base: Int, Sendable, Hashable {
        case noMessageStored = 0
        case mostRecentMessageStored = 1
    }

    private let base: Base

    /// `0`: nothing is stored; for frequent updates such as live scores, with a larger publishing budget. Broadcasts
    /// on it must have no `apns-expiration` other than `0` (`BadExpirationDate`).
    public static let noMessageStored = APNSMessageStoragePolicy(base: .noMessageStored)
    /// `1`: the newest message is stored for at most 8 hours (less if its `apns-expiration` says so) and reaches a
    /// device that comes online meanwhile; for infrequent updates.
    public static let mostRecentMessageStored = APNSMessageStoragePolicy(base: .mostRecentMessageStored)

    private init(base: Base) { self.base = base }

    /// The policy of a `message-storage-policy` value, `0` or `1`.
    public init?(rawValue: Int) {
        guard let base = Base(rawValue: rawValue) else { return nil }
        self.base = base
    }

    /// The `message-storage-policy` value: `0` or `1`.
    public var rawValue: Int { base.rawValue }

    public var description: String { base == .noMessageStored ? "0 (no message stored)" : "1 (most recent message stored)" }
}

/// A broadcast channel: its id and storage policy.
public struct APNSChannel: Sendable, Hashable, CustomStringConvertible {
    public let id: APNSChannelID
    public let storagePolicy: APNSMessageStoragePolicy

    public var description: String { "\(id), message-storage-policy \(storagePolicy)" }
}

/// A successful broadcast or channel-management answer: what it returned, with the request's `apns-request-id`.
public struct APNSChannelReply<Value: Sendable>: Sendable {
    /// The channel created or read, the ids listed, or the channel deleted or broadcast to.
    public let value: Value
    /// The `apns-request-id` APNs answered with: the caller's, or the one Herald generated (the same on every attempt).
    public let requestID: String
    /// How many times the request was sent (1 when the first attempt decided).
    public let attempts: Int
}

/// Why a broadcast or channel-management request did not succeed: APNs refused it (``rejection`` holds the status and
/// a §5.5 reason), no answer came within the retry policy, the request was invalid before sending, or the answer
/// was not what APNs documents.
public struct APNSChannelError: CodedError, Hashable {
    public typealias Code = ErrorCode<APNSChannelError>

    public let code: Code
    public let message: String
    /// APNs' answer, when it refused: status, reason, and the `apns-request-id` (in ``APNSRejection/apnsID``).
    public let rejection: APNSRejection?
    /// The `apns-request-id` the request was sent with; `nil` when it was never sent.
    public let requestID: String?
    /// How many times the request was sent.
    public let attempts: Int

    init(_ code: Code, _ message: String, rejection: APNSRejection? = nil, requestID: String? = nil, attempts: Int = 0) {
        self.code = code
        self.message = message
        self.rejection = rejection
        self.requestID = requestID
        self.attempts = attempts
    }

    /// APNs' reason, when it refused.
    public var reason: APNSReason? { rejection?.reason }
}

extension ErrorCode where Domain == APNSChannelError {
    /// APNs refused the request: ``APNSChannelError/rejection`` says why.
    public static let rejected = Self("rejected")
    /// No answer after the retry policy ran out (connection failures, timeouts, 5xx, shutdown).
    public static let failed = Self("failed")
    /// The request breaks an APNs rule Herald checks before sending; nothing was sent.
    public static let invalidRequest = Self("invalidRequest")
    /// APNs answered success without what its documentation promises (a created channel without `apns-channel-id`,
    /// a body that is not the documented JSON).
    public static let badResponse = Self("badResponse")
    /// The task waiting for the answer was cancelled: a request not yet written was never sent; one already written
    /// had its stream reset, and APNs may or may not have acted on it (list or read the channels to know).
    public static let cancelled = Self("cancelled")
}
