package import Foundation
package import HeraldCore
import HeraldStore

/// A scheduled broadcast to a Live Activity channel as the store keeps it: the request to APNs, prepared when the
/// broadcast was accepted.
///
/// A worker sends it at its time as it is, stamped with the time of sending; only the channel is looked up again (a
/// channel deleted meanwhile fails the broadcast). Stored as JSON (``jsonText``), format version 2; ``StoredJob`` reads
/// it back.
package struct BroadcastJob: Sendable, Hashable {
    /// The channel, as APNs named it.
    package let channelID: String
    /// The app's bare bundle id.
    package let bundleID: String
    /// The environment of the channel.
    package let environment: APNSEnvironment
    /// `update` or `end`.
    package let event: String
    /// When it is sent.
    package let sendAt: Date?
    /// The request: body and headers. Its `apns-request-id` is the send's id; the stored form leaves it out and
    /// ``StoredJob`` sets it from the send it reads.
    package let notification: PreparedBroadcast
    /// Whether ``stamped(at:)`` sets `aps.timestamp` to the time of sending (a broadcast's payload is stamped so).
    package let stampsTimestamp: Bool

    /// A job.
    package init(
        channelID: String, bundleID: String, environment: APNSEnvironment, event: String, sendAt: Date?,
        notification: PreparedBroadcast, stampsTimestamp: Bool
    ) {
        self.channelID = channelID
        self.bundleID = bundleID
        self.environment = environment
        self.event = event
        self.sendAt = sendAt
        self.notification = notification
        self.stampsTimestamp = stampsTimestamp
    }

    /// The job as a worker sends it at `date`: when ``stampsTimestamp``, the payload's `aps.timestamp` is `date`.
    package func stamped(at date: Date) -> BroadcastJob {
        guard stampsTimestamp else { return self }
        return BroadcastJob(
            channelID: channelID, bundleID: bundleID, environment: environment, event: event, sendAt: sendAt,
            notification: PreparedBroadcast(
                body: JSONValue.stamping(notification.body, at: date), bundleID: notification.bundleID,
                priority: notification.priority, expiration: notification.expiration,
                requestID: notification.requestID),
            stampsTimestamp: true)
    }

    /// The stored form: a JSON object with its members in name order, version 2.
    package var jsonText: String { json.storedText }
}

extension BroadcastJob {
    /// The value of `kind` in a broadcast's job.
    static let kind = "broadcast"

    /// The stored form, version 2:
    ///
    /// ```json
    /// {"v": 2, "kind": "broadcast", "channel": "…", "app": "com.example.app", "environment": "production",
    ///  "event": "update", "sendAt": "2026-12-24T18:00:00Z", "stampTimestamp": true,
    ///  "notification": {"body": "<base64>", "priority": 10, "expiration": 0}}
    /// ```
    var json: JSONValue {
        var request: [String: JSONValue] = ["body": .string(Data(notification.body).base64EncodedString())]
        if let priority = notification.priority { request["priority"] = .integer(priority.rawValue) }
        if let expiration = notification.expiration { request["expiration"] = .integer(expiration.secondsSince1970) }
        var members: [String: JSONValue] = [
            "v": .integer(StoredJob.currentVersion), "kind": .string(Self.kind), "channel": .string(channelID),
            "app": .string(bundleID), "environment": .string(environment.name), "event": .string(event),
            "notification": .object(request), "stampTimestamp": .bool(stampsTimestamp),
        ]
        if let sendAt { members["sendAt"] = .string(RFC3339.string(sendAt)) }
        return .object(members)
    }

    /// Reads a version-2 broadcast job; its request id is the send's.
    init(_ job: JobReader) throws(SendJobError) {
        let request = try job.object("notification")
        guard let environment = try job.environment("environment") else {
            throw job.failure("environment", "is missing")
        }
        let bundleID = try job.string("app")
        self.init(
            channelID: try job.string("channel"), bundleID: bundleID, environment: environment,
            event: try job.string("event"), sendAt: try job.optionalDate("sendAt"),
            notification: PreparedBroadcast(
                body: try request.bytes("body"), bundleID: bundleID, priority: try request.priority("priority"),
                expiration: try request.expiration("expiration"), requestID: APNSID(job.sendID.uuid)),
            stampsTimestamp: try job.flag("stampTimestamp"))
    }
}
