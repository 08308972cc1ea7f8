public import HeraldCore

/// Why a registration or unregistration did not reach the server, and whether it will be tried again.
///
/// `description` is safe to log: it never contains the full token or the registration key.
public struct RegistrationError: CodedError, CustomDebugStringConvertible {
    /// The kind of failure, for callers that branch on it.
    public typealias Code = ErrorCode<RegistrationError>

    /// What failed.
    public let code: Code
    /// What went wrong and what to do.
    public let message: String
    /// The last HTTP status received, if any.
    public let status: Int?
    /// The server's machine-readable `reason`, if it sent one.
    public let reason: String?
    /// The server's human-readable `error`, if it sent one.
    public let serverMessage: String?
    /// The registration field at fault, for `invalidRegistration`.
    public let field: String?
    /// How many requests were made.
    public let attempts: Int
    /// Whether the operation was saved so that ``RegistrationClient/retryPending()`` (or, for delivery receipts,
    /// ``RegistrationClient/sendPendingReceipts()``) can try it again later.
    public let isPendingSaved: Bool
    /// The last network or storage error, if any.
    public let underlying: (any Error)?

    init(
        _ code: Code, _ message: String, status: Int? = nil, reason: String? = nil, serverMessage: String? = nil,
        field: String? = nil, attempts: Int = 0, isPendingSaved: Bool = false, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.reason = reason
        self.serverMessage = serverMessage
        self.field = field
        self.attempts = attempts
        self.isPendingSaved = isPendingSaved
        self.underlying = underlying
    }

    static func invalidRegistration(field: String, _ message: String) -> RegistrationError {
        RegistrationError(.invalidRegistration, "\(field): \(message)", field: field)
    }

    /// The same failure, noting that the operation was saved to try again later.
    /// - Parameter method: What sends it again, such as `retryPending()`.
    func savedForLater(by method: String) -> RegistrationError {
        RegistrationError(
            code, message + " It was saved and will be sent again by \(method).", status: status, reason: reason,
            serverMessage: serverMessage, field: field, attempts: attempts, isPendingSaved: true, underlying: underlying
        )
    }

    public var debugDescription: String {
        var parts = ["RegistrationError(\(code))", message]
        if let status { parts.append("status \(status)") }
        if let reason { parts.append("reason \(reason)") }
        if let underlying { parts.append("underlying: \(String(reflecting: underlying))") }
        return parts.joined(separator: "; ")
    }
}

extension ErrorCode where Domain == RegistrationError {
    /// The server URL uses plain HTTP and plain HTTP was not allowed.
    public static let insecureURL = Self("insecureURL")
    /// The server URL is not an absolute http(s) URL.
    public static let invalidServerURL = Self("invalidServerURL")
    /// The registration breaks a documented limit; nothing was sent.
    public static let invalidRegistration = Self("invalidRegistration")
    /// The server refused the request with a 4xx status that retrying cannot fix.
    public static let rejected = Self("rejected")
    /// Every attempt failed with a network error, 429 or 5xx; the operation was saved to try again later.
    public static let gaveUp = Self("gaveUp")
    /// The task was cancelled between attempts; the operation was saved to try again later.
    public static let cancelled = Self("cancelled")
    /// The pending-operation record could not be read or written.
    public static let storageFailed = Self("storageFailed")
}
