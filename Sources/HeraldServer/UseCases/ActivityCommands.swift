import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore

/// What a Live Activity push shows, the part a start, an update, an end and a channel's broadcast share: its content
/// state and the optional presentation keys (docs/live-activities.md).
struct ActivityContent: Sendable, Hashable {
    /// The activity's `ContentState`; `nil` (an end only): the device keeps what it shows.
    var contentState: [String: JSONValue]?
    /// An alert as APNs takes it (a string, or an object with `title`, `body`, …), passed through.
    var alert: JSONValue?
    var sound: JSONValue?
    /// Seconds since 1970.
    var staleDate: Int?
    var relevanceScore: Double?

    init(
        contentState: [String: JSONValue]? = nil, alert: JSONValue? = nil, sound: JSONValue? = nil,
        staleDate: Int? = nil, relevanceScore: Double? = nil
    ) {
        self.contentState = contentState
        self.alert = alert
        self.sound = sound
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }

    /// Reads the content of a request's fields.
    /// - Parameter requiringState: Whether `contentState` must be there (a start, an update).
    /// - Throws: ``APIError`` `400 invalidField` naming the field.
    init(_ fields: JSONFields, requiringState: Bool) throws(APIError) {
        contentState = try fields.object("contentState")
        if contentState == nil, requiringState {
            throw APIError.invalidField("contentState", "give the activity's ContentState as an object")
        }
        alert = fields["alert"]
        sound = fields["sound"]
        staleDate = try fields.integer("staleDate", in: 0...Int(Int32.max))
        if let score = fields["relevanceScore"] {
            guard let number = score.doubleValue else {
                throw APIError.invalidField("relevanceScore", "it must be a number")
            }
            relevanceScore = number
        }
    }

    /// The `aps` of a push with this content for `event` (`start`, `update` or `end`).
    func aps(event: String) -> [String: JSONValue] {
        // An end without a final state keeps what the device shows.
        var aps: [String: JSONValue] = ["event": .string(event), "content-state": .object(contentState ?? [:])]
        if let alert { aps["alert"] = alert }
        if let sound { aps["sound"] = sound }
        if let staleDate { aps["stale-date"] = .integer(staleDate) }
        if let relevanceScore { aps["relevance-score"] = .number(relevanceScore) }
        return aps
    }
}

/// A Live Activity to start on the push-to-start tokens of a target's devices: `POST /api/activities`.
struct ActivityStart: Sendable, Hashable {
    /// The app's own id of the activity, such as an order number.
    var id: String
    /// The app's `ActivityAttributes` type.
    var activityType: String
    var target: SendRequest.Target
    var topic: String?
    var environment: APNSEnvironment?
    /// The activity's static attributes.
    var attributes: [String: JSONValue]
    var content: ActivityContent
    /// Whether the started activity registers an update token with Herald (`input-push-token`).
    var inputPushToken = true
    /// A broadcast channel the activity listens to instead (`input-push-channel`).
    var inputPushChannel: String?
    /// `nil`: 10.
    var priority: APNSPriority?
    var schedule: SendSchedule?
    var rate: Int?

    init(
        id: String, activityType: String, target: SendRequest.Target, topic: String? = nil,
        attributes: [String: JSONValue], content: ActivityContent
    ) {
        self.id = id
        self.activityType = activityType
        self.target = target
        self.topic = topic
        self.attributes = attributes
        self.content = content
    }

    /// Decodes `POST /api/activities`'s fields.
    /// - Throws: ``APIError`` `400 invalidField` naming the field, `missingTarget`, `badDeviceToken`, `BadPriority`.
    init(json fields: JSONFields) throws(APIError) {
        guard let id = try fields.string("activityId", bytes: 1...RegistrationRules.maximumActivityIDBytes) else {
            throw APIError.invalidField("activityId", "give the app's own id of the activity, such as an order number")
        }
        try TextRules.checkIdentifier(id, field: "activityId")
        guard let type = try fields.string("activityType", bytes: 1...RegistrationRules.maximumActivityTypeBytes)
        else {
            throw APIError.invalidField("activityType", "give the app's ActivityAttributes type, such as DeliveryAttributes")
        }
        try TextRules.checkIdentifier(type, field: "activityType")
        guard fields["target"] != nil else {
            throw APIError(
                .badRequest, reason: "missingTarget",
                "The activity has no \"target\": give the user, tag, token(s) or topic whose devices start it.")
        }
        let (target, targetTopic) = try SendRequest.target(fields["target"])
        guard let attributes = try fields.object("attributes") else {
            throw APIError.invalidField("attributes", "give the activity's static attributes as an object")
        }
        self.init(
            id: id, activityType: type, target: target, topic: try SendRequest.topic(fields, targetTopic: targetTopic),
            attributes: attributes, content: try ActivityContent(fields, requiringState: true))
        environment = try SendRequest.environment(fields)
        inputPushToken = try fields.bool("inputPushToken") ?? true
        inputPushChannel = try fields.string("inputPushChannel", bytes: 1...64)
        priority = try fields.integer("priority").map(SendRequest.priority)
        schedule = try SendSchedule.parse(fields)
        rate = try fields.integer("rate", in: 1...SendRequest.maximumRate)
    }

    /// The send that starts it: a `liveactivity` push to the target's push-to-start tokens of its type.
    var sendRequest: SendRequest {
        var aps = content.aps(event: "start")
        aps["attributes-type"] = .string(activityType)
        aps["attributes"] = .object(attributes)
        if let inputPushChannel {
            aps["input-push-channel"] = .string(inputPushChannel)
        } else if inputPushToken {
            aps["input-push-token"] = 1
        }
        var request = SendRequest(target: target, topic: topic, content: .raw(["aps": .object(aps)]))
        request.pushType = .liveactivity
        request.activityType = activityType
        request.environment = environment
        request.priority = priority ?? .immediate
        request.schedule = schedule
        request.rate = rate
        return request
    }
}

/// An update or the end of a running Live Activity, pushed to every update token of it: `PATCH` and
/// `DELETE /api/activities/{id}`, and the console's *End*.
struct ActivityChange: Sendable, Hashable {
    enum Event: String, Sendable {
        case update, end
    }

    var event: Event
    /// The app; `nil`: the server's (or the caller's) only app.
    var topic: String?
    var content: ActivityContent
    /// `nil`: 10 for an end or an update with an alert, else 5 (which ActivityKit does not budget).
    var priority: APNSPriority?
    /// An update at priority 10 beyond the activity's hourly budget (docs/live-activities.md, "Update budget").
    var force = false
    /// An end's: when the system removes the ended activity (seconds since 1970).
    var dismissalDate: Int?
    var schedule: SendSchedule?
    var rate: Int?

    init(_ event: Event, topic: String? = nil, content: ActivityContent = ActivityContent()) {
        self.event = event
        self.topic = topic
        self.content = content
    }

    /// Decodes the fields of `PATCH /api/activities/{id}` (an update) or `DELETE /api/activities/{id}` (an end).
    /// - Throws: ``APIError`` `400 invalidField` naming the field, `BadPriority`.
    init(_ event: Event, json fields: JSONFields) throws(APIError) {
        self.init(
            event, topic: try fields.string("topic"),
            content: try ActivityContent(fields, requiringState: event == .update))
        priority = try fields.integer("priority").map(SendRequest.priority)
        if event == .update {
            force = try fields.bool("force") ?? false
            if force, priority != .immediate {
                throw APIError.invalidField(
                    "force", "\"force\": true insists on priority 10 beyond the budget: give it with \"priority\": 10")
            }
        } else {
            dismissalDate = try fields.integer("dismissalDate", in: 0...Int(Int32.max))
        }
        schedule = try SendSchedule.parse(fields)
        rate = try fields.integer("rate", in: 1...SendRequest.maximumRate)
    }

    /// The send that pushes it to the activity's update tokens.
    func sendRequest(activity id: String) -> SendRequest {
        var aps = content.aps(event: event.rawValue)
        if let dismissalDate { aps["dismissal-date"] = .integer(dismissalDate) }
        var request = SendRequest(target: .activity(id), topic: topic, content: .raw(["aps": .object(aps)]))
        request.pushType = .liveactivity
        request.priority = priority ?? (event == .end || content.alert != nil ? .immediate : .considerPower)
        request.schedule = schedule
        request.rate = rate
        return request
    }
}
