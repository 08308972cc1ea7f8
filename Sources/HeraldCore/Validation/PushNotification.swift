/// One notification as a provider sends it: the body plus the APNs request headers, not yet addressed to a device.
///
/// Call ``prepare()`` to validate it and encode the body once; the result can then go to any number of devices.
public struct PushNotification: Sendable, Hashable {
    /// The body: a typed payload, or JSON bytes the caller already has.
    public enum Body: Sendable, Hashable {
        case payload(Payload)
        case raw([UInt8])
    }

    public var body: Body
    /// `apns-push-type`.
    public var pushType: APNSPushType
    /// `apns-topic`: the bundle id plus the push type's suffix.
    public var topic: String
    /// `apns-priority`; `nil` sends no header (APNs assumes 10).
    public var priority: APNSPriority?
    /// `apns-expiration`; `nil` sends no header (APNs applies its own storage policy).
    public var expiration: APNSExpiration?
    /// `apns-collapse-id`: at most 64 bytes of UTF-8.
    public var collapseID: String?
    /// `apns-id`; `nil` lets the sender pick one (kept the same across retries).
    public var apnsID: APNSID?

    public init(
        _ payload: Payload, pushType: APNSPushType = .alert, topic: String, priority: APNSPriority? = nil,
        expiration: APNSExpiration? = nil, collapseID: String? = nil, apnsID: APNSID? = nil
    ) {
        self.init(body: .payload(payload), pushType: pushType, topic: topic, priority: priority,
                  expiration: expiration, collapseID: collapseID, apnsID: apnsID)
    }

    public init(
        body: Body, pushType: APNSPushType, topic: String, priority: APNSPriority? = nil,
        expiration: APNSExpiration? = nil, collapseID: String? = nil, apnsID: APNSID? = nil
    ) {
        self.body = body
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// The priority APNs will apply: the header's, or 10 when absent.
    public var effectivePriority: APNSPriority { priority ?? .default }

    /// Validates the headers and payload against APNs' rules and encodes the body.
    ///
    /// Raw bodies are parsed to check them too; their bytes are sent unchanged.
    /// - Throws: the first ``NotificationValidationError`` found, naming the field and, where Apple documents one,
    ///   the reason APNs would have answered.
    public func prepare() throws(NotificationValidationError) -> PreparedNotification {
        let (bytes, payload) = try body.encoded { size throws(NotificationValidationError) in
            try NotificationValidator.checkSize(size, pushType: pushType)
        }
        try NotificationValidator.checkHeaders(of: self)
        try NotificationValidator.checkPayload(payload, of: self)
        return PreparedNotification(
            body: bytes, pushType: pushType, topic: topic, priority: priority, expiration: expiration,
            collapseID: collapseID, apnsID: apnsID)
    }
}

/// A validated notification with its body encoded: what the sender puts on the wire.
public struct PreparedNotification: Sendable, Hashable, CustomStringConvertible {
    /// The JSON body, ready to send.
    public let body: [UInt8]
    public let pushType: APNSPushType
    public let topic: String
    public let priority: APNSPriority?
    public let expiration: APNSExpiration?
    public let collapseID: String?
    public let apnsID: APNSID?

    /// Unchecked: for ``PushNotification/prepare()``, and for a stored send whose notifications were checked when it
    /// was accepted (`HeraldSending`'s `SendJob`).
    package init(
        body: [UInt8], pushType: APNSPushType, topic: String, priority: APNSPriority?, expiration: APNSExpiration?,
        collapseID: String?, apnsID: APNSID?
    ) {
        (self.body, self.pushType, self.topic, self.priority, self.expiration, self.collapseID, self.apnsID) =
            (body, pushType, topic, priority, expiration, collapseID, apnsID)
    }

    /// Headers and body size; the body itself stays out of logs.
    public var description: String {
        "PreparedNotification(\(pushType), topic: \(topic), \(body.count) bytes, priority: \(priority.map(String.init(describing:)) ?? "default"), apns-id: \(apnsID.map(String.init(describing:)) ?? "unset"))"
    }

    /// The same notification at another priority: a Live Activity update for a device whose person turned frequent
    /// updates off goes at priority 5 (docs/live-activities.md).
    public func with(priority: APNSPriority) -> PreparedNotification {
        PreparedNotification(body: body, pushType: pushType, topic: topic, priority: priority, expiration: expiration,
                             collapseID: collapseID, apnsID: apnsID)
    }

    /// The same notification with an `apns-id`, for a sender that assigns one before the first attempt.
    public func with(apnsID: APNSID) -> PreparedNotification {
        PreparedNotification(body: body, pushType: pushType, topic: topic, priority: priority, expiration: expiration,
                             collapseID: collapseID, apnsID: apnsID)
    }
}

extension PushNotification.Body {
    /// The bytes to send and the payload they hold: a typed payload encoded, or raw bytes parsed to check them.
    /// `checkSize` sees the byte count first, so an oversized raw body is refused before it is parsed.
    func encoded(
        checkingSize checkSize: (Int) throws(NotificationValidationError) -> Void
    ) throws(NotificationValidationError) -> (bytes: [UInt8], payload: Payload) {
        switch self {
        case .payload(let typed):
            let bytes = typed.jsonBytes()
            try checkSize(bytes.count)
            return (bytes, typed)
        case .raw(let raw):
            try checkSize(raw.count)
            return (raw, try Payload(jsonBytes: raw))
        }
    }
}
