package import HeraldCore
package import HeraldStore

/// Why a send's stored job cannot be run: it was written by a newer server, or it cannot be read.
///
/// `description` is safe to log and to show a person: it names the send and the part of the job that is wrong, never
/// a device token or a payload. A worker that meets one fails the send with this message: nothing more of it is sent.
package struct SendJobError: CodedError {
    /// What kind of failure this is, for callers that branch on it. New codes may be added.
    package typealias Code = ErrorCode<SendJobError>

    /// What kind of failure this is.
    package let code: Code
    /// The send whose job it is.
    package let sendID: SendID
    /// What went wrong and what to do, safe to log.
    package let message: String

    init(_ code: Code, sendID: SendID, _ message: String) {
        self.code = code
        self.sendID = sendID
        self.message = message
    }

    /// A job of a format version this server does not read yet.
    static func newer(_ version: Int, sendID: SendID) -> SendJobError {
        SendJobError(
            .newerVersion, sendID: sendID,
            "The stored job of send \(sendID) is version \(version), newer than this server (reads up to \(StoredJob.currentVersion)): upgrade the server that runs it."
        )
    }

    /// A job that is not what any version of Herald writes.
    static func unreadable(_ problem: String, sendID: SendID) -> SendJobError {
        SendJobError(
            .unreadable, sendID: sendID,
            "The stored job of send \(sendID) cannot be read: \(problem). It was damaged or changed outside Herald, so the send cannot run: send it again."
        )
    }
}

extension ErrorCode where Domain == SendJobError {
    /// The job was written by a newer Herald, in a format version this one does not read.
    package static let newerVersion = Self("newerVersion")
    /// The job is not JSON, not an object, or lacks or mistypes a member its version requires.
    package static let unreadable = Self("unreadable")
}
