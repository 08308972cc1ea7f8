/// Why a notification would not be accepted, found before it is sent.
///
/// Names the header or payload field at fault (`apns-priority`, `aps.sound.volume`), says what to do, and carries the
/// reason APNs would have answered where Apple has one (``reason``); some rules catch mistakes APNs accepts
/// silently (a background push with an alert is dropped on the device), and those have no reason. Apple does not
/// document the reason for a device-push body that is not a JSON object; Herald (here and in its emulator) uses
/// `BadRequestPayload`, the broadcast endpoints' reason for it.
public struct NotificationValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule failed, for callers that branch on it.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let payloadEmpty = Code("payloadEmpty")
        public static let payloadTooLarge = Code("payloadTooLarge")
        public static let payloadNotJSON = Code("payloadNotJSON")
        public static let payloadNotObject = Code("payloadNotObject")
        public static let invalidField = Code("invalidField")
        public static let missingTopic = Code("missingTopic")
        public static let badTopic = Code("badTopic")
        public static let topicDoesNotMatchPushType = Code("topicDoesNotMatchPushType")
        public static let badPriority = Code("badPriority")
        public static let collapseIDEmpty = Code("collapseIDEmpty")
        public static let collapseIDTooLong = Code("collapseIDTooLong")
        public static let pushTypeMismatch = Code("pushTypeMismatch")
        public static let nothingVisible = Code("nothingVisible")
        public static let valueOutOfRange = Code("valueOutOfRange")
        public static let liveActivity = Code("liveActivity")
        public static let missingField = Code("missingField")
    }

    public let code: Code
    /// The header (`apns-priority`) or payload path (`aps.sound.volume`) at fault.
    public let field: String
    /// What APNs would have answered, when Apple documents one.
    public let reason: APNSReason?
    /// What went wrong and what to do, safe to show a user: never contains token or key material.
    public let message: String

    public init(_ code: Code, field: String, reason: APNSReason?, message: String) {
        self.code = code
        self.field = field
        self.reason = reason
        self.message = message
    }

    public var description: String {
        if let reason { "\(field): \(message) (APNs: \(reason))" } else { "\(field): \(message)" }
    }
}
