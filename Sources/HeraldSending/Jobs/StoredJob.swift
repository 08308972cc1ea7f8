package import HeraldCore
package import HeraldStore

/// A queued send's stored job (``HeraldStore/SendRecord/job``), read back by the worker that runs it.
///
/// Two format versions exist:
/// - **Version 2** (`"v": 2`, written since the send engine moved to `HeraldSending`): a ``SendJob`` or a
///   ``BroadcastJob``, run as accepted without looking at the configuration.
/// - **Version 1** (no `"v"`): the HTTP request body, with the app filled in (a broadcast's: `{"broadcast": {…}}` with
///   the channel). Only the server parses requests, so it reads these itself, against its current configuration.
///
/// A job with a `target` member is a request body whatever its `v` (a request could carry a `v` of its own; no
/// version-2 job has a `target`).
package enum StoredJob: Sendable {
    /// A send to devices.
    case send(SendJob)
    /// A scheduled broadcast to a channel.
    case broadcast(BroadcastJob)
    /// A version-1 job: the request body as the server accepted it.
    case requestBody(JSONValue)

    /// The newest format version this server writes and reads.
    package static let currentVersion = 2

    /// Reads a stored job.
    /// - Parameters:
    ///   - text: The job as stored.
    ///   - sendID: The send whose job it is: error messages name it, and a broadcast's request id is its id.
    /// - Throws: ``SendJobError`` `newerVersion` for a version above ``currentVersion``; `unreadable` for text that
    ///   is not a JSON object, a version that is not a whole number from 1, or a version-2 job that lacks or mistypes
    ///   a member.
    package init(jsonText text: String, sendID: SendID) throws(SendJobError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            throw .unreadable("it is not JSON (\(error.description))", sendID: sendID)
        }
        guard let members = value.objectValue else {
            throw .unreadable("it is \(value.typeName), not an object", sendID: sendID)
        }
        let job = JobReader(members, sendID: sendID)
        guard let version = job["v"], job["target"] == nil else {
            self = .requestBody(value)
            return
        }
        guard case .integer(let number) = version, number >= 1 else {
            throw .unreadable("its version \"v\" is \(version), not a whole number from 1", sendID: sendID)
        }
        switch number {
        case 1:
            self = .requestBody(value)
        case Self.currentVersion:
            switch try job.string("kind") {
            case SendJob.kind: self = .send(try SendJob(job))
            case BroadcastJob.kind: self = .broadcast(try BroadcastJob(job))
            case let kind: throw job.failure("kind", "is \"\(kind)\", not send or broadcast")
            }
        default:
            throw .newer(number, sendID: sendID)
        }
    }
}
