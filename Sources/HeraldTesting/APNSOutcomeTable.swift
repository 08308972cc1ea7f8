public import HeraldCore

/// The expected outcome of device-push requests, written from apns-protocol.md §2, §3, §5 and §10 — not from
/// Herald's emulator or sender. Both are checked against it: the emulator by sending each request raw, the
/// sender by sending each notification through its API. A shared misunderstanding then fails a test.
///
/// Each case starts from a valid request (token auth, a development device with topic `com.example.app`, push type
/// alert, a small JSON body) and changes one thing.
public enum APNSOutcomeTable {
    /// The bundle id of the fixture app, and the topics its fixture devices use.
    public static let bundleID = "com.example.app"

    /// Which device the request is addressed to.
    public enum Target: Sendable, Hashable {
        /// A development device with topic `com.example.app`.
        case developmentDevice
        /// A production device, sent to the development endpoint.
        case productionDeviceOnDevelopment
        /// A VoIP device (topic `com.example.app.voip`).
        case voipDevice
        /// A device marked unregistered at ``unregisteredAtMilliseconds``.
        case unregisteredDevice
        /// A device whose token expired.
        case expiredDevice
        /// A well-formed token no device has (strict mode).
        case unknownToken
        /// A path with this text after `/3/device/`.
        case rawToken(String)
        /// A path other than `/3/device/…`.
        case rawPath(String)
    }

    /// The provider token to send.
    public enum Authorization: Sendable, Hashable {
        case valid
        case missing
        case garbage
        /// Issued more than an hour ago.
        case expired
        /// Signed with a key the server does not trust.
        case unknownKey
    }

    /// The body to send.
    public enum Body: Sendable, Hashable {
        case valid
        case empty
        /// Valid JSON of exactly this many bytes.
        case size(Int)
        case notJSON

        /// The bytes to send.
        public var bytes: [UInt8] {
            switch self {
            case .valid: Array(APNSOutcomeTable.validBody.utf8)
            case .empty: []
            case .size(let size): APNSOutcomeTable.body(ofSize: size)
            case .notJSON: Array("hello, not json".utf8)
            }
        }
    }

    public struct Case: Sendable, CustomStringConvertible {
        public let name: String
        public let method: String
        public let target: Target
        public let authorization: Authorization
        /// Headers replacing the baseline's (a `nil` value removes it).
        public let headers: [String: String?]
        /// A header sent twice.
        public let duplicatedHeader: String?
        public let body: Body
        public let status: Int
        public let reason: APNSReason?
        /// Whether Herald's sender refuses this before sending (core validation), naming the same reason.
        public let caughtBeforeSending: Bool

        public var description: String { name }

        /// The baseline headers with this case's replacements; a `nil` value is a header the case removes.
        public var requestHeaders: [String: String?] {
            var merged = APNSOutcomeTable.baselineHeaders.mapValues { Optional($0) }
            for (name, value) in headers { merged[name] = value }
            return merged
        }

        init(_ name: String, method: String = "POST", target: Target = .developmentDevice, authorization: Authorization = .valid,
             headers: [String: String?] = [:], duplicatedHeader: String? = nil, body: Body = .valid,
             status: Int, reason: APNSReason?, caughtBeforeSending: Bool = false) {
            self.name = name
            self.method = method
            self.target = target
            self.authorization = authorization
            self.headers = headers
            self.duplicatedHeader = duplicatedHeader
            self.body = body
            self.status = status
            self.reason = reason
            self.caughtBeforeSending = caughtBeforeSending
        }
    }

    /// When the fixture's unregistered device stopped being valid: 2026-01-01T00:00:00Z, in milliseconds.
    public static let unregisteredAtMilliseconds = 1_767_225_600_000

    /// The baseline headers every case starts from (plus `authorization`).
    public static let baselineHeaders: [String: String] = ["apns-topic": bundleID, "apns-push-type": "alert"]

    /// The baseline body.
    public static let validBody = #"{"aps":{"alert":{"title":"Hello","body":"From the outcome table"}}}"#

    public static let cases: [Case] = [
        Case("a valid request is accepted", status: 200, reason: nil),
        Case("priority 5, an expiration and a collapse id are accepted", headers: ["apns-priority": "5", "apns-expiration": "1893456000", "apns-collapse-id": "score"], status: 200, reason: nil),
        Case("an uppercase apns-id is accepted", headers: ["apns-id": "9E8B1F4C-1D0A-4C47-8E2B-7A5D3C9F0B12"], status: 200, reason: nil),
        Case("GET is not allowed", method: "GET", status: 405, reason: .methodNotAllowed),
        Case("a path outside /3/device is BadPath", target: .rawPath("/3/devices/abcd"), status: 404, reason: .badPath),
        Case("an empty token is MissingDeviceToken", target: .rawToken(""), status: 400, reason: .missingDeviceToken),
        Case("a repeated header is DuplicateHeaders", duplicatedHeader: "apns-topic", status: 400, reason: .duplicateHeaders),
        Case("no provider token is MissingProviderToken", authorization: .missing, status: 403, reason: .missingProviderToken),
        Case("a malformed provider token is InvalidProviderToken", authorization: .garbage, status: 403, reason: .invalidProviderToken),
        Case("an untrusted key is InvalidProviderToken", authorization: .unknownKey, status: 403, reason: .invalidProviderToken),
        Case("a token over an hour old is ExpiredProviderToken", authorization: .expired, status: 403, reason: .expiredProviderToken),
        Case("a malformed apns-id is BadMessageId", headers: ["apns-id": "not-a-uuid"], status: 400, reason: .badMessageID),
        Case("an unknown push type is InvalidPushType", headers: ["apns-push-type": "banner"], status: 400, reason: .invalidPushType),
        Case("priority 7 is BadPriority", headers: ["apns-priority": "7"], status: 400, reason: .badPriority),
        Case("a background push at priority 10 is BadPriority", headers: ["apns-push-type": "background", "apns-priority": "10"], status: 400, reason: .badPriority, caughtBeforeSending: true),
        Case("a non-numeric expiration is BadExpirationDate", headers: ["apns-expiration": "tomorrow"], status: 400, reason: .badExpirationDate),
        Case("a 65-byte collapse id is BadCollapseId", headers: ["apns-collapse-id": String(repeating: "c", count: 65)], status: 400, reason: .badCollapseID, caughtBeforeSending: true),
        Case("no topic is MissingTopic", headers: ["apns-topic": nil], status: 400, reason: .missingTopic, caughtBeforeSending: true),
        Case("a malformed topic is BadTopic", headers: ["apns-topic": "com example app"], status: 400, reason: .badTopic, caughtBeforeSending: true),
        Case("a topic the key does not cover is TopicDisallowed", headers: ["apns-topic": "com.other.app"], status: 400, reason: .topicDisallowed),
        Case("a VoIP push to the app topic is DeviceTokenNotForTopic", headers: ["apns-push-type": "voip"], status: 400, reason: .deviceTokenNotForTopic, caughtBeforeSending: true),
        Case("a token that is not hex is BadDeviceToken", target: .rawToken(String(repeating: "zz", count: 32)), status: 400, reason: .badDeviceToken),
        Case("a production token on the development endpoint is BadDeviceToken", target: .productionDeviceOnDevelopment, status: 400, reason: .badDeviceToken),
        Case("an unknown token is BadDeviceToken", target: .unknownToken, status: 400, reason: .badDeviceToken),
        Case("a VoIP token with the app topic is DeviceTokenNotForTopic", target: .voipDevice, status: 400, reason: .deviceTokenNotForTopic),
        Case("an unregistered token is 410 Unregistered with a timestamp", target: .unregisteredDevice, status: 410, reason: .unregistered),
        Case("an expired token is 410 ExpiredToken", target: .expiredDevice, status: 410, reason: .expiredToken),
        Case("an empty body is PayloadEmpty", body: .empty, status: 400, reason: .payloadEmpty, caughtBeforeSending: true),
        Case("4,096 bytes are accepted", body: .size(4096), status: 200, reason: nil),
        Case("4,097 bytes are PayloadTooLarge", body: .size(4097), status: 413, reason: .payloadTooLarge, caughtBeforeSending: true),
        Case("5,120 bytes are accepted for VoIP", target: .voipDevice, headers: ["apns-push-type": "voip", "apns-topic": bundleID + ".voip"], body: .size(5120), status: 200, reason: nil),
        Case("5,121 bytes are PayloadTooLarge for VoIP", target: .voipDevice, headers: ["apns-push-type": "voip", "apns-topic": bundleID + ".voip"], body: .size(5121), status: 413, reason: .payloadTooLarge, caughtBeforeSending: true),
        Case("a body that is not JSON is BadRequestPayload", body: .notJSON, status: 400, reason: .badRequestPayload, caughtBeforeSending: true),
    ]

    /// A JSON body of exactly `size` bytes (at least 30).
    public static func body(ofSize size: Int) -> [UInt8] {
        let skeleton = #"{"aps":{"alert":"Hi"},"pad":""}"#
        return Array((#"{"aps":{"alert":"Hi"},"pad":""# + String(repeating: "x", count: size - skeleton.utf8.count) + #""}"#).utf8)
    }
}
