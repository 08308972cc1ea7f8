public import Foundation
public import HeraldCore

/// What happened to one notification for one device.
public struct APNSDelivery: Sendable, CustomStringConvertible {
    /// The device it was for.
    public let token: DeviceToken
    /// The `apns-id` it was sent with (the same on every attempt).
    public let apnsID: String
    public let outcome: APNSOutcome
    /// How many times it was sent (1 when the first attempt decided), attempts APNs never processed included.
    public let attempts: Int
    /// How many of ``attempts`` APNs never processed (streams above a GOAWAY's last-stream-id, refused streams,
    /// requests a closing connection never wrote): they were safe to repeat, the first of a streak at once.
    public let unprocessedAttempts: Int
    /// Every attempt, when there was more than one (``APNSAttempt``); empty when the first attempt decided.
    public let trail: [APNSAttempt]

    public var description: String { "\(token.redacted) \(apnsID): \(outcome) after \(attempts) attempt\(attempts == 1 ? "" : "s")" }
}

/// The end of a send: accepted, rejected by APNs, or failed to get an answer.
public enum APNSOutcome: Sendable, CustomStringConvertible {
    /// APNs accepted it (which is not yet delivery). `uniqueID` is the sandbox's `apns-unique-id`.
    case accepted(apnsID: String, uniqueID: String?)
    /// APNs refused it with a status and reason.
    case rejected(APNSRejection)
    /// Not accepted, though APNs never refused it for good: connection failures, timeouts or answers asking for a
    /// retry (429, 500, 503) until the retry policy stopped — its message then counts what each attempt met — or
    /// invalid credentials configuration. Also a send whose task was cancelled before the end
    /// (``APNSClientError/Code/cancelled``, ``isCancelled``): that is no failure but an unknown outcome.
    case failed(APNSClientError)

    public var isAccepted: Bool { if case .accepted = self { true } else { false } }

    /// Whether the send was cancelled before it ended (its task was cancelled): APNs may or may not have received it,
    /// so it neither failed nor succeeded. Sending it again with the same `apns-id` is safe.
    public var isCancelled: Bool { if case .failed(let error) = self { error.code == .cancelled } else { false } }

    /// The rejection, if APNs refused.
    public var rejection: APNSRejection? { if case .rejected(let rejection) = self { rejection } else { nil } }

    public var description: String {
        switch self {
        case .accepted(let id, _): "accepted (apns-id \(id))"
        case .rejected(let rejection): "rejected: \(rejection)"
        case .failed(let error): "failed: \(error)"
        }
    }
}

/// An APNs error response, decoded so that even an empty or non-JSON body keeps the status and apns-id.
public struct APNSRejection: Sendable, Hashable, CustomStringConvertible {
    public let status: Int
    /// The `reason` string; `.unknown`-style raw text when Apple adds one Herald does not know.
    public let reason: APNSReason
    /// For 410 `Unregistered`: when APNs last confirmed the token was invalid.
    public let timestamp: Date?
    public let apnsID: String
    public let uniqueID: String?

    public var description: String {
        var text = "\(status) \(reason)"
        if let timestamp { text += " since \(Int(timestamp.timeIntervalSince1970 * 1000)) ms" }
        return text
    }
}

/// Why a notification could not get an answer from APNs, or the client could not start.
public struct APNSClientError: CodedError, Hashable {
    public typealias Code = ErrorCode<APNSClientError>

    public let code: Code
    public let message: String
    /// For ``Code/retryLater``: APNs's last answer, which asked for a retry the policy no longer allowed.
    public let rejection: APNSRejection?

    init(_ code: Code, _ message: String, rejection: APNSRejection? = nil) {
        self.code = code
        self.message = message
        self.rejection = rejection
    }

    static func configuration(_ message: String) -> APNSClientError { APNSClientError(.configuration, message) }

    /// Whether sending again may succeed.
    public var isRetryable: Bool {
        code == .timeout || code == .connectionClosed || code == .notProcessed || code == .connectFailed
            || code == .retryLater
    }
}

extension ErrorCode where Domain == APNSClientError {
    /// The attempt had no response within ``APNSClientConfiguration/requestTimeout``.
    public static let timeout = Self("timeout")
    /// The connection closed before the response (it may or may not have been processed).
    public static let connectionClosed = Self("connectionClosed")
    /// The server refused the stream or it was above a GOAWAY's last stream id: not processed, safe to resend.
    public static let notProcessed = Self("notProcessed")
    /// A connection could not be opened (DNS, TCP, TLS, ALPN).
    public static let connectFailed = Self("connectFailed")
    /// The response was not an APNs response.
    public static let badResponse = Self("badResponse")
    /// The client was shut down.
    public static let shutdown = Self("shutdown")
    /// The task that waited for the answer was cancelled (a send cancelled, a server stopping): a request not yet
    /// written was never sent, one already written had its stream reset and APNs may or may not have received it. Not
    /// a failure: the outcome is unknown, and the notification may be sent again with the same `apns-id`.
    public static let cancelled = Self("cancelled")
    /// APNs answered that the notification should be sent again later (429 `TooManyRequests`, 500, 503
    /// `ServiceUnavailable` or `Shutdown`) until the retry policy stopped; ``APNSClientError/rejection`` is the last
    /// answer. APNs did not take the notification: it may be sent again.
    public static let retryLater = Self("retryLater")
    /// The configuration or credentials are not usable.
    public static let configuration = Self("configuration")
    /// The notification failed validation before sending.
    public static let invalidNotification = Self("invalidNotification")
}
