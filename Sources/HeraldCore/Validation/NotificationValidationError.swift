/// Why a notification would not be accepted, found before it is sent.
///
/// Names the header or payload field at fault (`apns-priority`, `aps.sound.volume`), says what to do, and carries the
/// reason APNs would have answered where Apple has one (``reason``); some rules catch mistakes APNs accepts
/// silently (a background push with an alert is dropped on the device), and those have no reason. Apple does not
/// document the reason for a device-push body that is not a JSON object; Herald (here and in its emulator) uses
/// `BadRequestPayload`, the broadcast endpoints' reason for it.
public struct NotificationValidationError: CodedError, Hashable {
    /// Which rule failed, for callers that branch on it.
    public typealias Code = ErrorCode<NotificationValidationError>

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

extension ErrorCode where Domain == NotificationValidationError {
    public static let payloadEmpty = Self("payloadEmpty")
    public static let payloadTooLarge = Self("payloadTooLarge")
    public static let payloadNotJSON = Self("payloadNotJSON")
    public static let payloadNotObject = Self("payloadNotObject")
    public static let invalidField = Self("invalidField")
    public static let missingTopic = Self("missingTopic")
    public static let badTopic = Self("badTopic")
    public static let topicDoesNotMatchPushType = Self("topicDoesNotMatchPushType")
    public static let badPriority = Self("badPriority")
    public static let collapseIDEmpty = Self("collapseIDEmpty")
    public static let collapseIDTooLong = Self("collapseIDTooLong")
    public static let pushTypeMismatch = Self("pushTypeMismatch")
    public static let nothingVisible = Self("nothingVisible")
    public static let valueOutOfRange = Self("valueOutOfRange")
    public static let liveActivity = Self("liveActivity")
    public static let missingField = Self("missingField")
}
