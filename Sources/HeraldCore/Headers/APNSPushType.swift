/// The value of the `apns-push-type` header: what kind of notification a request carries.
///
/// Each push type needs its own topic: the app's bundle id plus a suffix (``topicSuffix``), except `mdm`,
/// whose topic comes from the MDM certificate.
public enum APNSPushType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Alert, sound or badge shown to the user.
    case alert
    /// A silent `content-available` push that wakes the app. Priority must be 5.
    case background
    /// A ClockKit complication update (watchOS).
    case complication
    /// Reloads Control Center and Lock Screen controls (iOS 18+).
    case controls
    /// Signals a File Provider extension.
    case fileprovider
    /// Starts, updates or ends a Live Activity.
    case liveactivity
    /// Wakes a Location Push Service Extension. Token authentication only.
    case location
    /// Tells a managed device to contact its MDM server.
    case mdm
    /// A Push to Talk update.
    case pushtotalk
    /// A PushKit VoIP call. Payloads may be up to 5,120 bytes.
    case voip
    /// Reloads WidgetKit timelines.
    case widgets

    /// Parses a header value. Apple's pages spell some values with capitals (`LiveActivity`), so case is ignored.
    public init?(headerValue: some StringProtocol) {
        if let exact = APNSPushType(rawValue: String(headerValue)) {
            self = exact
        } else if let folded = APNSPushType(rawValue: headerValue.lowercased()) {
            self = folded
        } else {
            return nil
        }
    }

    /// What must follow the bundle id in `apns-topic` for this push type; empty for `alert` and `background`.
    /// `nil` for `mdm`, whose topic is the certificate's UID and carries no suffix rule.
    public var topicSuffix: String? {
        switch self {
        case .alert, .background: ""
        case .complication: ".complication"
        case .controls: ".push-type.controls"
        case .fileprovider: ".pushkit.fileprovider"
        case .liveactivity: ".push-type.liveactivity"
        case .location: ".location-query"
        case .mdm: nil
        case .pushtotalk: ".voip-ptt"
        case .voip: ".voip"
        case .widgets: ".push-type.widgets"
        }
    }

    /// The topic for this push type given the app's bundle id.
    public func topic(forBundleID bundleID: String) -> String { bundleID + (topicSuffix ?? "") }

    /// The largest body APNs accepts for this push type, in bytes.
    public var maximumPayloadSize: Int { self == .voip ? 5120 : 4096 }

    /// The bundle id a topic names for this push type, or `nil` when the topic lacks the required suffix
    /// (or, for `alert` and `background`, carries another push type's suffix).
    public func bundleID(fromTopic topic: String) -> String? {
        guard let suffix = topicSuffix else { return topic.isEmpty ? nil : topic }
        if suffix.isEmpty {
            let carriesOtherSuffix = APNSPushType.suffixedTypes.contains { topic.hasSuffix($0.topicSuffix!) }
            return topic.isEmpty || carriesOtherSuffix ? nil : topic
        }
        guard topic.hasSuffix(suffix), topic.utf8.count > suffix.utf8.count else { return nil }
        return String(topic.dropLast(suffix.count))
    }

    private static let suffixedTypes: [APNSPushType] = allCases.filter { !($0.topicSuffix ?? "").isEmpty }

    /// The push type a topic's suffix implies, or `nil` for a bare bundle id.
    public static func impliedBySuffix(ofTopic topic: String) -> APNSPushType? {
        suffixedTypes.first { topic.hasSuffix($0.topicSuffix!) }
    }

    public var description: String { rawValue }
}
