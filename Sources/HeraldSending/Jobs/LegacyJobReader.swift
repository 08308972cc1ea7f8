package import Foundation
package import HeraldCore
package import HeraldStore

/// Reads the version-1 jobs of sends queued by an older server: the HTTP request body, which only the server parses.
///
/// The engine runs a version-2 job as it was accepted; a version-1 job must be validated again against today's
/// configuration (its app, its channel, the limits), so a worker asks the server that runs it for the job the body
/// asks for today.
package protocol LegacyJobReader: Sendable {
    /// The job a stored request body asks for now: a ``StoredJob/send(_:)`` or ``StoredJob/broadcast(_:)``.
    /// - Parameters:
    ///   - body: The stored request body, with the app filled in (a broadcast's: `{"broadcast": {…}}` with the
    ///     channel).
    ///   - now: The time of sending: a Live Activity payload without `aps.timestamp` gets it; the schedule is not
    ///     checked against it.
    /// - Throws: ``SendJobError`` `noLongerValid` with what is wrong (the app is gone, a field no longer validates,
    ///   the channel was deleted), which fails the send.
    func job(fromRequestBody body: JSONValue, sendID: SendID, at now: Date) async throws(SendJobError) -> StoredJob
}

extension SendJobError {
    /// A version-1 job (a stored request) that today's configuration no longer accepts.
    /// - Parameter message: What is wrong and what to do, safe to show.
    package static func noLongerValid(_ message: String, sendID: SendID) -> SendJobError {
        SendJobError(.noLongerValid, sendID: sendID, message)
    }
}

extension ErrorCode where Domain == SendJobError {
    /// A version-1 job (the request body an older server stored) no longer validates against the configuration.
    package static let noLongerValid = Self("noLongerValid")
}
