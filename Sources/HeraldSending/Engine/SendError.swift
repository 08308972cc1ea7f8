package import HeraldCore

/// Why the send engine refused a send, a broadcast or a cancellation: what was asked for does not exist or cannot
/// change any more.
///
/// The engine knows nothing of HTTP: the server maps each code to a status and keeps the code as the answer's
/// `reason` (`unknownToken` is `404`, `sendFinished` `409`, …). The message names what was wrong and what to do, and
/// shows a device token only redacted.
package struct SendError: CodedError {
    /// What kind of refusal this is, for callers that branch on it. New codes may be added.
    package typealias Code = ErrorCode<SendError>

    /// What kind of refusal this is.
    package let code: Code
    /// What went wrong and what to do, safe to show.
    package let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == SendError {
    /// The single token a send names is not registered, or was removed after APNs rejected it.
    package static let unknownToken = Self("unknownToken")
    /// No send has the id.
    package static let unknownSend = Self("unknownSend")
    /// The send completed or failed already: there is nothing left to cancel.
    package static let sendFinished = Self("sendFinished")
}
