public import HeraldCore

extension Payload {
    /// Decodes a received notification's `userInfo` (`UNNotificationContent.userInfo`, or the dictionary passed to
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`) into the typed payload.
    ///
    /// Every key beside `aps` lands in ``Payload/custom``. To decode JSON bytes instead (an `.apns` file, an
    /// emulator inbox), use core's `Payload(jsonBytes:)`.
    /// - Throws: ``NotificationDecodingError``: `unsupportedValue` or `nonStringKey` for values JSON cannot hold,
    ///   `invalidPayload` when a known key has the wrong type (`"badge": "3"`), naming the field.
    public init(userInfo: [AnyHashable: Any]) throws(NotificationDecodingError) {
        let members = try JSONValue.members(of: userInfo, path: "userInfo")
        do {
            try self.init(json: .object(members))
        } catch {
            throw NotificationDecodingError(invalidPayload: error)
        }
    }
}

/// Why a received notification could not be decoded.
public struct NotificationDecodingError: CodedError, Hashable {
    /// The kind of failure.
    public typealias Code = ErrorCode<NotificationDecodingError>

    /// What failed.
    public let code: Code
    /// Where: `userInfo.aps.badge`, or the payload field core names (`aps.badge`).
    public let path: String
    /// What went wrong and what to do.
    public let message: String
    /// Core's validation error, for `invalidPayload` and `invalidLiveActivity`.
    public let underlying: NotificationValidationError?

    init(_ code: Code, path: String, _ message: String, underlying: NotificationValidationError? = nil) {
        self.code = code
        self.path = path
        self.message = message
        self.underlying = underlying
    }

    /// Core's refusal of a payload, under the field it names.
    init(invalidPayload error: NotificationValidationError) {
        self.init(.invalidPayload, path: error.field, error.description, underlying: error)
    }
}

extension ErrorCode where Domain == NotificationDecodingError {
    /// A value JSON cannot hold, such as a `Date` or `Data`.
    public static let unsupportedValue = Self("unsupportedValue")
    /// A dictionary key that is not a string.
    public static let nonStringKey = Self("nonStringKey")
    /// A known payload key has the wrong type or value.
    public static let invalidPayload = Self("invalidPayload")
    /// The payload is not a valid Live Activity push: a required key is missing (`event`, `timestamp`,
    /// `content-state`; for `start` also `attributes-type`, `attributes` and an alert) or a key is on the wrong event.
    public static let invalidLiveActivity = Self("invalidLiveActivity")
    /// A JSON value does not decode as the `Decodable` type asked for (a `content-state` that is not the app's
    /// `ContentState`).
    public static let decodingFailed = Self("decodingFailed")
}

extension Payload {
    /// The payload as a notification's `userInfo`: `aps` (when present) and the custom keys, as Foundation objects.
    ///
    /// A service extension that decrypted custom keys puts this on the content it hands back, so the app sees the
    /// decrypted keys when the user taps the notification.
    public var userInfo: [AnyHashable: Any] {
        // The encoder is core's: no second copy of the key mapping here.
        guard let json = try? JSONValue(parsing: jsonBytes()), case .object(let members) = json else { return [:] }
        var userInfo = [AnyHashable: Any]()
        for (key, value) in members { userInfo[key] = value.foundationValue }
        return userInfo
    }
}
