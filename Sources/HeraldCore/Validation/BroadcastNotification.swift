/// One Live Activity update (or end) for every device subscribed to a broadcast channel (iOS 18+,
/// apns-protocol.md §1.4): the body plus the headers a broadcast carries. The channel is named when sending.
///
/// Call ``prepare()`` to check it against APNs' rules and encode the body once.
public struct BroadcastNotification: Sendable, Hashable {
    /// The body: a typed Live Activity payload (`event` `update` or `end`, `timestamp`, `content-state`), or JSON bytes.
    public var body: PushNotification.Body
    /// The app's bare bundle id, the `<bundle-id>` of `/4/broadcasts/apps/<bundle-id>`: no `.push-type.liveactivity`.
    public var bundleID: String
    /// `apns-priority`: 10 (APNs' default, counted against each activity's hourly budget) or 5 (not counted).
    public var priority: APNSPriority?
    /// `apns-expiration`: `0` or absent on a channel that stores no message; on a storing channel, until when the
    /// newest message waits for devices that are offline (APNs keeps it at most 8 hours).
    public var expiration: APNSExpiration?
    /// `apns-request-id`; `nil` lets the sender pick one (kept the same across retries).
    public var requestID: APNSID?

    /// The largest broadcast body APNs accepts, in bytes.
    public static let maximumPayloadSize = 5120

    public init(
        body: PushNotification.Body, bundleID: String, priority: APNSPriority? = nil, expiration: APNSExpiration? = nil,
        requestID: APNSID? = nil
    ) {
        self.body = body
        self.bundleID = bundleID
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }

    /// Checks the bundle id, headers and payload as APNs would, and encodes the body.
    ///
    /// The payload follows the Live Activity rules of a device push (``PushNotification/prepare()``) except that
    /// it may be up to 5,120 bytes and cannot start an activity.
    /// - Throws: the first ``NotificationValidationError`` found, naming the field and the reason APNs would answer.
    public func prepare() throws(NotificationValidationError) -> PreparedBroadcast {
        if let implied = APNSPushType.impliedBySuffix(ofTopic: bundleID) {
            throw NotificationValidationError(
                .badTopic, field: "bundle id", reason: .topicDisallowed,
                message: "A broadcast names the bare bundle id, but \"\(bundleID)\" ends in the \(implied) suffix \"\(implied.topicSuffix ?? "")\": drop it.")
        }
        try NotificationValidator.checkTopic(bundleID, pushType: .alert)
        let (bytes, payload) = try body.encoded { size throws(NotificationValidationError) in try Self.checkSize(size) }
        // The device-push rules of a Live Activity update, on the topic a device push of it would have.
        let asDevicePush = PushNotification(
            body: body, pushType: .liveactivity, topic: bundleID + (APNSPushType.liveactivity.topicSuffix ?? ""),
            priority: priority, expiration: expiration)
        try NotificationValidator.checkHeaders(of: asDevicePush)
        try NotificationValidator.checkPayload(payload, of: asDevicePush)
        if payload.aps.event == .start {
            throw NotificationValidationError(
                .liveActivity, field: "aps.event", reason: nil,
                message: "A broadcast cannot start a Live Activity: start it with a push-to-start token (input-push-channel subscribes it), then broadcast updates.")
        }
        return PreparedBroadcast(body: bytes, bundleID: bundleID, priority: priority, expiration: expiration, requestID: requestID)
    }

    private static func checkSize(_ size: Int) throws(NotificationValidationError) {
        if size == 0 {
            throw NotificationValidationError(
                .payloadEmpty, field: "payload", reason: .payloadEmpty,
                message: "The broadcast is empty: send a Live Activity payload such as {\"aps\":{\"event\":\"update\",\"timestamp\":…,\"content-state\":{…}}}.")
        }
        if size > maximumPayloadSize {
            throw NotificationValidationError(
                .payloadTooLarge, field: "payload", reason: .payloadTooLarge,
                message: "The broadcast is \(size) bytes; APNs accepts at most \(maximumPayloadSize): shrink the content-state.")
        }
    }
}

/// A checked broadcast with its body encoded: what the sender puts on the wire.
public struct PreparedBroadcast: Sendable, Hashable, CustomStringConvertible {
    public let body: [UInt8]
    public let bundleID: String
    public let priority: APNSPriority?
    public let expiration: APNSExpiration?
    public let requestID: APNSID?

    /// Unchecked: for ``BroadcastNotification/prepare()``, and for tests that must send what APNs refuses.
    package init(body: [UInt8], bundleID: String, priority: APNSPriority?, expiration: APNSExpiration?, requestID: APNSID?) {
        self.body = body
        self.bundleID = bundleID
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }

    /// Headers and body size; the body itself stays out of logs.
    public var description: String {
        "PreparedBroadcast(\(bundleID), \(body.count) bytes, priority: \(priority.map(String.init(describing:)) ?? "default"), expiration: \(expiration.map { String($0.secondsSince1970) } ?? "unset"))"
    }
}
