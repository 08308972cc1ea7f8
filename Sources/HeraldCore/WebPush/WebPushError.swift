/// Why a Web Push message could not be encrypted, decrypted or authorized (RFC 8291, RFC 8292).
public struct WebPushError: CodedError, Hashable {
    public typealias Code = ErrorCode<WebPushError>

    public let code: Code
    public let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == WebPushError {
    /// A subscription's `keys.p256dh` or `keys.auth` is not what a browser hands out.
    public static let invalidSubscriptionKey = Self("invalidSubscriptionKey")
    /// A subscription's endpoint is not an https URL as push services give them.
    public static let invalidEndpoint = Self("invalidEndpoint")
    /// A subscription's endpoint is on a host that is not a known push service.
    public static let endpointNotAllowed = Self("endpointNotAllowed")
    /// The message does not fit one 4,096-byte record.
    public static let payloadTooLarge = Self("payloadTooLarge")
    /// An encrypted body is not an `aes128gcm` body of one record.
    public static let malformedBody = Self("malformedBody")
    /// The body does not open with the subscription's keys (wrong keys, or altered on the way).
    public static let decryptionFailed = Self("decryptionFailed")
    /// A notification a browser cannot show: no text, or only localization keys.
    public static let notRenderable = Self("notRenderable")
    /// A `navigate` that is not an https URL.
    public static let invalidNavigate = Self("invalidNavigate")
    /// A `dir` that is not `auto`, `ltr` or `rtl`.
    public static let invalidDirection = Self("invalidDirection")
    /// `actions` that are not up to two buttons of an id, a title and an https link.
    public static let invalidActions = Self("invalidActions")
    /// A VAPID key is not a P-256 private key.
    public static let invalidVAPIDKey = Self("invalidVAPIDKey")
    /// The VAPID `sub` is not a `mailto:` or `https:` URL (Apple answers `403 BadJwtToken`).
    public static let badSubject = Self("badSubject")
    /// The VAPID `aud` is not the endpoint's origin.
    public static let badAudience = Self("badAudience")
    /// The `Authorization: vapid t=…, k=…` header or its JWT is malformed, expired, too long-lived or badly signed.
    public static let badJWT = Self("badJWT")
}
