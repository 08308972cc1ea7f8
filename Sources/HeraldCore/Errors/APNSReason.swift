/// The `reason` string of an APNs error response, with what it means for the sender.
///
/// The set is open: every documented reason has a static member, and a reason Apple adds later is kept as its
/// text (``isKnown`` is then `false`) and treated conservatively: not retried, token kept.
public struct APNSReason: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    // MARK: 400
    public static let badCollapseID = APNSReason("BadCollapseId")
    public static let badDeviceToken = APNSReason("BadDeviceToken")
    public static let badExpirationDate = APNSReason("BadExpirationDate")
    public static let badMessageID = APNSReason("BadMessageId")
    public static let badPriority = APNSReason("BadPriority")
    public static let badTopic = APNSReason("BadTopic")
    public static let deviceTokenNotForTopic = APNSReason("DeviceTokenNotForTopic")
    public static let duplicateHeaders = APNSReason("DuplicateHeaders")
    public static let idleTimeout = APNSReason("IdleTimeout")
    public static let invalidPushType = APNSReason("InvalidPushType")
    public static let missingDeviceToken = APNSReason("MissingDeviceToken")
    public static let missingTopic = APNSReason("MissingTopic")
    public static let payloadEmpty = APNSReason("PayloadEmpty")
    public static let topicDisallowed = APNSReason("TopicDisallowed")
    // Broadcast and channel management.
    public static let featureNotEnabled = APNSReason("FeatureNotEnabled")
    public static let missingChannelID = APNSReason("MissingChannelId")
    public static let badChannelID = APNSReason("BadChannelId")
    public static let channelNotRegistered = APNSReason("ChannelNotRegistered")
    public static let badRequestParams = APNSReason("BadRequestParams")
    public static let badRequestPayload = APNSReason("BadRequestPayload")
    public static let missingPushType = APNSReason("MissingPushType")
    public static let cannotCreateChannelConfig = APNSReason("CannotCreateChannelConfig")

    // MARK: 403
    public static let badCertificate = APNSReason("BadCertificate")
    public static let badCertificateEnvironment = APNSReason("BadCertificateEnvironment")
    public static let expiredProviderToken = APNSReason("ExpiredProviderToken")
    public static let forbidden = APNSReason("Forbidden")
    public static let invalidProviderToken = APNSReason("InvalidProviderToken")
    public static let missingProviderToken = APNSReason("MissingProviderToken")
    public static let unrelatedKeyIDInToken = APNSReason("UnrelatedKeyIdInToken")
    public static let badEnvironmentKeyIDInToken = APNSReason("BadEnvironmentKeyIdInToken")
    /// The spelling observed in the field for ``badEnvironmentKeyIDInToken``.
    public static let badEnvironmentKeyInToken = APNSReason("BadEnvironmentKeyInToken")
    public static let topicMismatch = APNSReason("TopicMismatch")

    // MARK: 404, 405, 410, 413
    public static let badPath = APNSReason("BadPath")
    public static let methodNotAllowed = APNSReason("MethodNotAllowed")
    public static let expiredToken = APNSReason("ExpiredToken")
    public static let unregistered = APNSReason("Unregistered")
    public static let payloadTooLarge = APNSReason("PayloadTooLarge")

    // MARK: 429, 500, 503
    public static let tooManyProviderTokenUpdates = APNSReason("TooManyProviderTokenUpdates")
    public static let tooManyRequests = APNSReason("TooManyRequests")
    public static let internalServerError = APNSReason("InternalServerError")
    public static let serviceUnavailable = APNSReason("ServiceUnavailable")
    public static let shutdown = APNSReason("Shutdown")

    /// Every documented reason of a device push, in the order of Apple's table.
    public static let devicePushReasons: [APNSReason] = [
        .badCollapseID, .badDeviceToken, .badExpirationDate, .badMessageID, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
        .missingProviderToken, .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken, .badEnvironmentKeyInToken,
        .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
    ]

    /// The reasons only broadcast and channel-management endpoints use.
    public static let broadcastReasons: [APNSReason] = [
        .featureNotEnabled, .missingChannelID, .badChannelID, .channelNotRegistered, .badRequestParams,
        .badRequestPayload, .missingPushType, .cannotCreateChannelConfig, .topicMismatch,
    ]

    /// Whether Apple documents this reason.
    public var isKnown: Bool { Self.table[rawValue] != nil }

    /// The HTTP status APNs answers with this reason, or `nil` for an unknown reason.
    public var status: Int? { Self.table[rawValue]?.status }

    /// What a sender should do about a request that got this reason.
    public var retry: RetryAdvice { Self.table[rawValue]?.retry ?? .never }

    /// Whether the sender may send the same request again (possibly after a delay, a new JWT or connection).
    public var isRetryable: Bool { retry != .never }

    /// Whether the device token is dead and should be removed from the registry (subject to the 410 timestamp rule).
    public var invalidatesToken: Bool { self == .unregistered || self == .expiredToken }

    /// Whether the reason often means "right token, wrong environment" and is worth one try on the other host.
    public var suggestsEnvironmentMismatch: Bool {
        self == .badDeviceToken || self == .badEnvironmentKeyIDInToken || self == .badEnvironmentKeyInToken
            || self == .badCertificateEnvironment
    }

    /// Whether the reason describes the credentials or connection rather than this one notification.
    public var concernsConnection: Bool {
        Self.table[rawValue]?.status == 403 || self == .tooManyProviderTokenUpdates
    }

    /// What a sender should do about a reason.
    public enum RetryAdvice: Sendable, Hashable {
        /// Fix the cause first; never send the same request again.
        case never
        /// Send again later with exponential backoff and jitter.
        case withBackoff
        /// Send again once with a freshly signed provider token.
        case afterRefreshingProviderToken
        /// Send again on another connection.
        case onAnotherConnection
    }

    public var description: String { rawValue }

    /// A plain-words explanation with what to do, for people reading CLI output and logs.
    public var explanation: String {
        Self.table[rawValue]?.explanation ?? "APNs answered with a reason Herald does not know (\(rawValue)); see Apple's documentation."
    }

    private struct Entry {
        let status: Int
        let retry: RetryAdvice
        let explanation: String
    }

    private static let table: [String: Entry] = [
        "BadCollapseId": Entry(status: 400, retry: .never, explanation: "The collapse id is longer than 64 bytes: shorten it."),
        "BadDeviceToken": Entry(status: 400, retry: .never, explanation: "APNs does not know this device token in this environment. Is it a development token sent to production (or the reverse)? Try the other environment (--sandbox / --production)."),
        "BadExpirationDate": Entry(status: 400, retry: .never, explanation: "apns-expiration is not a valid UNIX time in seconds; on a broadcast channel that stores no message (policy 0) it must be 0 or absent."),
        "BadMessageId": Entry(status: 400, retry: .never, explanation: "apns-id is not a UUID in 8-4-4-4-12 form."),
        "BadPriority": Entry(status: 400, retry: .never, explanation: "apns-priority must be 10, 5 or 1, and background pushes must use 5."),
        "BadTopic": Entry(status: 400, retry: .never, explanation: "apns-topic is not a valid topic: use the app's bundle id plus the push type's suffix."),
        "DeviceTokenNotForTopic": Entry(status: 400, retry: .never, explanation: "The device token belongs to another topic: check the bundle id and the push type's topic suffix."),
        "DuplicateHeaders": Entry(status: 400, retry: .never, explanation: "A request header was sent more than once."),
        "IdleTimeout": Entry(status: 400, retry: .onAnotherConnection, explanation: "APNs reported an idle timeout; send again on a healthy connection."),
        "InvalidPushType": Entry(status: 400, retry: .never, explanation: "apns-push-type is not one of the values APNs knows."),
        "MissingDeviceToken": Entry(status: 400, retry: .never, explanation: "The request path has no device token."),
        "MissingTopic": Entry(status: 400, retry: .never, explanation: "apns-topic is required: set it to the app's bundle id."),
        "PayloadEmpty": Entry(status: 400, retry: .never, explanation: "The notification has no body: send a JSON object with an aps dictionary."),
        "TopicDisallowed": Entry(status: 400, retry: .never, explanation: "These credentials may not send to this topic: check the key's or certificate's apps."),
        "FeatureNotEnabled": Entry(status: 400, retry: .never, explanation: "Broadcast is not enabled for this app: switch on the Broadcast capability in the developer portal."),
        "MissingChannelId": Entry(status: 400, retry: .never, explanation: "apns-channel-id is required for this request."),
        "BadChannelId": Entry(status: 400, retry: .never, explanation: "apns-channel-id is badly encoded or too long."),
        "ChannelNotRegistered": Entry(status: 400, retry: .never, explanation: "No channel with this id exists in this environment."),
        "BadRequestParams": Entry(status: 400, retry: .never, explanation: "The request body has an attribute APNs does not know."),
        "BadRequestPayload": Entry(status: 400, retry: .never, explanation: "The request body is not valid JSON."),
        "MissingPushType": Entry(status: 400, retry: .never, explanation: "apns-push-type is required for this request."),
        "CannotCreateChannelConfig": Entry(status: 400, retry: .never, explanation: "The app already has 10,000 channels in this environment: delete unused ones."),
        "BadCertificate": Entry(status: 403, retry: .never, explanation: "The client certificate is not valid: export a current APNs certificate for this app."),
        "BadCertificateEnvironment": Entry(status: 403, retry: .never, explanation: "The client certificate is for the other environment."),
        "ExpiredProviderToken": Entry(status: 403, retry: .afterRefreshingProviderToken, explanation: "The provider token (JWT) is more than an hour old: sign a new one. Check the machine's clock."),
        "Forbidden": Entry(status: 403, retry: .never, explanation: "APNs refused the action."),
        "InvalidProviderToken": Entry(status: 403, retry: .never, explanation: "The provider token (JWT) is not valid: check the key id, the team id and that the .p8 key belongs to them."),
        "MissingProviderToken": Entry(status: 403, retry: .never, explanation: "No provider token was sent and the connection has no client certificate: configure a .p8 key or a certificate."),
        "UnrelatedKeyIdInToken": Entry(status: 403, retry: .onAnotherConnection, explanation: "This key is not related to the key first used on the connection: use one connection per key."),
        "BadEnvironmentKeyIdInToken": Entry(status: 403, retry: .never, explanation: "This key is restricted to the other environment: use a key for this environment or send to the other host."),
        "BadEnvironmentKeyInToken": Entry(status: 403, retry: .never, explanation: "This key is restricted to the other environment: use a key for this environment or send to the other host."),
        "TopicMismatch": Entry(status: 403, retry: .never, explanation: "The credentials do not cover the bundle id in the path."),
        "BadPath": Entry(status: 404, retry: .never, explanation: "The request path is not /3/device/<token>."),
        "MethodNotAllowed": Entry(status: 405, retry: .never, explanation: "Only POST is allowed."),
        "ExpiredToken": Entry(status: 410, retry: .never, explanation: "The device token has expired: stop sending to it."),
        "Unregistered": Entry(status: 410, retry: .never, explanation: "The device token is no longer active (the app was probably removed): stop sending to it until the app registers again."),
        "PayloadTooLarge": Entry(status: 413, retry: .never, explanation: "The payload is over the limit (4,096 bytes; 5,120 for VoIP): shrink it."),
        "TooManyProviderTokenUpdates": Entry(status: 429, retry: .onAnotherConnection, explanation: "The provider token changed more than once in 20 minutes on one connection: reuse one token per key for about 50 minutes."),
        "TooManyRequests": Entry(status: 429, retry: .withBackoff, explanation: "Too many notifications to this device in a short time: send again later."),
        "InternalServerError": Entry(status: 500, retry: .withBackoff, explanation: "APNs had an internal error: send again with backoff."),
        "ServiceUnavailable": Entry(status: 503, retry: .withBackoff, explanation: "APNs is unavailable: send again with backoff."),
        "Shutdown": Entry(status: 503, retry: .onAnotherConnection, explanation: "This APNs server is shutting down: send again on another connection."),
    ]
}
