import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore

/// A broadcast to a channel, parsed and validated: what `POST /api/channels/{id}/broadcast` asked for, and what a
/// worker sends when a scheduled one comes due.
///
/// A broadcast is one request to APNs, which delivers it to every device subscribed to the channel. It is a send like
/// any other (recorded, listed by `GET /api/sends`, cancellable while it waits, fired once by one instance), except
/// that the server knows no subscriber: it can wait for an instant (`sendAt`) but not for each device's local time,
/// and there is nothing to pace. A scheduled one stores its ``job`` (``HeraldSending/BroadcastJob``): the request as
/// prepared when it was accepted, which a worker sends as it is (``init(job:sendID:at:)``). Its payload's `timestamp`,
/// which a device compares against the update it shows, is the time of sending, not of asking.
struct BroadcastPlan: Sendable {
    /// The fields a broadcast request may have.
    static let fields: Set<String> = [
        "event", "contentState", "alert", "sound", "staleDate", "dismissalDate", "relevanceScore", "priority",
        "expiration", "sendAt",
    ]
    /// The key of a version-1 stored job (the request's fields and the channel) that marks it a broadcast.
    static let jobKey = "broadcast"

    /// The send's id; the broadcast's `apns-request-id` is the same UUID, so APNs's logs name the send.
    let sendID: SendID
    /// What a scheduled broadcast stores, and a worker sends.
    let job: BroadcastJob

    /// The channel, as recorded.
    var channelID: String { job.channelID }
    /// The app (bare bundle id).
    var topic: String { job.bundleID }
    var environment: APNSEnvironment { job.environment }
    /// When it is sent; `nil`: now.
    var sendAt: Date? { job.sendAt }
    /// The request, checked and encoded.
    var prepared: PreparedBroadcast { job.notification }
    /// `update` or `end`.
    var event: String { job.event }

    /// The notification in words, as sends show it.
    var summary: String { "liveactivity broadcast (\(event))" }

    /// The target in words, as sends show it.
    var targetDescription: String { "channel \(channelID) (\(environment.name))" }

    /// A stored broadcast, as a worker sends it: stamped with the time of sending, nothing checked again.
    init(job: BroadcastJob, sendID: SendID, at now: Date) {
        self.sendID = sendID
        self.job = job.stamped(at: now)
    }

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
        var aps = try ActivityController.content(fields, event: event, requiringState: event == "update")
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
        switch try SendSchedule.parse(fields, now: resumed ? nil : now) {
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
        self.sendID = sendID
        job = BroadcastJob(
            channelID: channel.id, bundleID: channel.topic, environment: channel.environment, event: event,
            sendAt: sendAt, notification: prepared, stampsTimestamp: true)
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
