public import Foundation
public import HeraldCore

/// A Live Activity push, read the way ActivityKit reads it (apns-protocol.md §4.5).
///
/// ActivityKit consumes these pushes itself; the app never gets them in `userInfo`. Decode them where they are data:
/// an emulator inbox, an `.apns` file, a payload logged by the server, or a test of the app's `ContentState`:
///
/// ```swift
/// let push = try LiveActivityPayload(jsonBytes: body)
/// if push.event == .update {
///     let state = try push.decodeContentState(as: DeliveryAttributes.ContentState.self)
/// }
/// ```
///
/// The keys are core's ``APS`` fields, checked with ``APS/validateLiveActivity()`` (the rules the send path applies)
/// and given their Foundation types: times become `Date`s, `content-state` and `attributes` stay JSON until the app
/// decodes them as its own types.
public struct LiveActivityPayload: Sendable, Hashable {
    /// Whether the push starts, updates or ends the activity.
    public var event: LiveActivityEvent
    /// When the server sent it (`timestamp`); the device keeps the most recent and ignores older ones.
    public var timestamp: Date
    /// The activity's new dynamic state (`content-state`), always a JSON object.
    public var contentState: JSONValue
    /// After this, the activity shows as out of date (`stale-date`).
    public var staleDate: Date?
    /// For `end`: when the ended activity leaves the Lock Screen (`dismissal-date`); a past date removes it at once.
    public var dismissalDate: Date?
    /// How prominent the activity is among the app's others (`relevance-score`); compared, not bounded.
    public var relevanceScore: Double?
    /// For `start`: the `ActivityAttributes` type's name (`attributes-type`).
    public var attributesType: String?
    /// For `start`: the static attributes (`attributes`), always a JSON object.
    public var attributes: JSONValue?
    /// For `start` (iOS 18+): whether the new activity should mint an update token (`input-push-token: 1`).
    public var inputPushToken: Bool
    /// For `start` (iOS 18+): the broadcast channel the new activity subscribes to (`input-push-channel`).
    public var inputPushChannel: String?
    /// The alert that lights the screen; required for `start`, optional otherwise.
    public var alert: Alert?
    /// Keys beside `aps`.
    public var custom: [String: JSONValue]

    /// Reads a decoded payload as a Live Activity push.
    /// - Throws: ``NotificationDecodingError`` (`invalidLiveActivity`) naming the key at fault when a required key is
    ///   missing (`aps.event`, `aps.timestamp`, `aps.content-state`; for `start` also `aps.attributes-type`,
    ///   `aps.attributes` and `aps.alert`) or a key is on the wrong event.
    public init(_ payload: Payload) throws(NotificationDecodingError) {
        let aps = payload.aps
        do {
            try aps.validateLiveActivity()
        } catch {
            throw NotificationDecodingError(
                .invalidLiveActivity, path: error.field, error.description, underlying: error)
        }
        // Guaranteed by the validation above; unwrapped without `!` so a change there cannot turn into a crash.
        guard let event = aps.event, let timestamp = aps.timestamp, let contentState = aps.contentState else {
            throw NotificationDecodingError(
                .invalidLiveActivity, path: "aps", "A Live Activity push needs event, timestamp and content-state.")
        }
        self.event = event
        self.timestamp = Date(timeIntervalSince1970: TimeInterval(timestamp))
        self.contentState = .object(contentState)
        self.staleDate = aps.staleDate.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        self.dismissalDate = aps.dismissalDate.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        self.relevanceScore = aps.relevanceScore
        self.attributesType = aps.attributesType
        self.attributes = aps.attributes.map(JSONValue.object)
        self.inputPushToken = aps.inputPushToken
        self.inputPushChannel = aps.inputPushChannel
        self.alert = aps.alert
        self.custom = payload.custom
    }

    /// Decodes a Live Activity push from its JSON body.
    /// - Throws: ``NotificationDecodingError``: `invalidPayload` when the body is not a JSON object or a known key
    ///   has the wrong type (`"timestamp": "soon"`), naming the field; `invalidLiveActivity` as ``init(_:)``.
    public init(jsonBytes: some Collection<UInt8>) throws(NotificationDecodingError) {
        let payload: Payload
        do {
            payload = try Payload(jsonBytes: jsonBytes)
        } catch {
            throw NotificationDecodingError(invalidPayload: error)
        }
        try self.init(payload)
    }

    /// Decodes `content-state` as the app's `ContentState`, as ActivityKit does (default `JSONDecoder` strategies).
    /// - Throws: ``NotificationDecodingError`` (`decodingFailed`) naming the first key that does not fit.
    public func decodeContentState<State: Decodable>(as type: State.Type = State.self) throws(NotificationDecodingError)
        -> State
    {
        try contentState.decode(State.self, path: "aps.content-state")
    }

    /// Decodes a `start` push's `attributes` as the app's `ActivityAttributes` type.
    /// - Throws: ``NotificationDecodingError``: `invalidLiveActivity` when the push has no attributes (it is not a
    ///   `start`), `decodingFailed` naming the first key that does not fit.
    public func decodeAttributes<Attributes: Decodable>(
        as type: Attributes.Type = Attributes.self
    ) throws(NotificationDecodingError) -> Attributes {
        guard let attributes else {
            throw NotificationDecodingError(
                .invalidLiveActivity, path: "aps.attributes",
                "This \(event.rawValue) push has no attributes: only a start push carries them.")
        }
        return try attributes.decode(Attributes.self, path: "aps.attributes")
    }
}
