import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore

/// A broadcast request read into a ``HeraldSending/BroadcastPlan``: `POST /api/channels/{id}/broadcast`'s fields,
/// checked against the channel, or a version-1 stored job (the request and the channel) that a worker meets.
extension BroadcastPlan {
    /// The fields a broadcast request may have.
    static let fields: Set<String> = [
        "event", "contentState", "alert", "sound", "staleDate", "dismissalDate", "relevanceScore", "priority",
        "expiration", "sendAt",
    ]
    /// The key of a version-1 stored job (the request's fields and the channel) that marks it a broadcast.
    static let jobKey = "broadcast"

    /// Parses and validates a broadcast to a live channel.
    /// - Parameters:
    ///   - now: The time of sending: the payload's `timestamp`, and what `sendAt` must not be before (unless
    ///     `resumed`).
    ///   - resumed: Whether a worker reads a version-1 job (a stored request) again.
    /// - Throws: ``APIError`` `400` naming the field, or with the APNs reason the broadcast would cause.
    init(
        _ fields: JSONFields, channel: ChannelRecord, sendID: SendID, at now: Date, resumed: Bool = false
    ) throws(APIError) {
        if fields["localTime"] != nil {
            throw APIError.invalidField(
                "localTime",
                "a broadcast reaches every subscriber with one request, and the server knows no subscriber's time zone: use sendAt"
            )
        }
        if fields["rate"] != nil {
            throw APIError.invalidField(
                "rate", "a broadcast is one request to APNs, which delivers it to every subscriber: there is nothing to pace")
        }
        if let unknown = fields.members.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw APIError.invalidField(
                unknown, "it is not a field of a broadcast: use \(Self.fields.sorted().joined(separator: ", "))")
        }
        let event = try fields.string("event") ?? "update"
        guard event == "update" || event == "end" else {
            throw APIError.invalidField(
                "event", "a broadcast is an update or an end; a Live Activity cannot be started by one")
        }
        var aps = try ActivityContent(fields, requiringState: event == "update").aps(event: event)
        aps["timestamp"] = .integer(Int(now.timeIntervalSince1970))
        if let dismissal = try fields.integer("dismissalDate", in: 0...Int(Int32.max)) {
            guard event == "end" else { throw APIError.invalidField("dismissalDate", "only an end has one") }
            aps["dismissal-date"] = .integer(dismissal)
        }
        let priority = try fields.integer("priority").map { value throws(APIError) in
            guard value == 5 || value == 10, let priority = APNSPriority(rawValue: value) else {
                throw APIError.invalidField("priority", "it must be 10 (budgeted) or 5")
            }
            return priority
        }
        let expiration = try fields.integer("expiration", in: 0...Int(Int32.max)).map {
            APNSExpiration(secondsSince1970: $0)
        }
        if let expiration, expiration.secondsSince1970 != 0,
            channel.storagePolicy == APNSMessageStoragePolicy.noMessageStored.rawValue
        {
            // APNs refuses it; checked here so that a scheduled broadcast fails when asked for, not at its time.
            throw APIError(
                .badRequest, reason: APNSReason.badExpirationDate.rawValue,
                "\"expiration\": the channel \(channel.id) stores no message (storage policy 0), so APNs takes only 0 or none."
            )
        }
        let sendAt: Date?
        let schedule = try SendSchedule.parse(fields)
        if !resumed { try schedule?.check(at: now) }
        switch schedule {
        case .at(let date)?: sendAt = date
        case nil: sendAt = nil
        case .localTime?: preconditionFailure("localTime is refused above")
        }
        let notification = BroadcastNotification(
            body: .raw(JSONValue.object(["aps": .object(aps)]).jsonBytes), bundleID: channel.topic,
            priority: priority, expiration: expiration, requestID: APNSID(sendID.uuid))
        let prepared: PreparedBroadcast
        do {
            prepared = try notification.prepare()
        } catch {
            throw APIError(.badRequest, reason: error.reason?.rawValue ?? error.code.description, error.description)
        }
        let job = BroadcastJob(
            channelID: channel.id, bundleID: channel.topic, environment: channel.environment, event: event,
            sendAt: sendAt, notification: prepared, stampsTimestamp: true)
        self.init(validated: job, sendID: sendID)
    }

    /// The request fields and channel id of a version-1 stored broadcast job; `nil` when the job is not a broadcast.
    static func storedRequest(_ job: JSONValue) -> (fields: JSONFields, channelID: String)? {
        guard case .object(var members)? = job[jobKey], case .string(let channel)? = members["channel"] else {
            return nil
        }
        members["channel"] = nil
        return (JSONFields(members), channel)
    }
}
