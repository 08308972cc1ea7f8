/// What a registered token is the address of: the `tokenKind` of a registration.
///
/// An app can hold several tokens at once: its device token, a PushKit VoIP token, a push-to-start token and one
/// update token per Live Activity, widget and control tokens. Each is registered separately with its kind, so the
/// server knows which push types (and topic suffixes) it can send to it.
public struct TokenKind: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable, CaseIterable {
        case device
        case voip
        case liveActivityStart = "liveactivity-start"
        case liveActivity = "liveactivity"
        case widgets
        case controls
        case location
        case pushToTalk = "pushtotalk"
        case complication
        case fileProvider = "fileprovider"
        case webPush = "webpush"
    }

    private let base: Base

    private init(_ base: Base) { self.base = base }

    /// The token from `registerForRemoteNotifications()`: alerts and background pushes.
    public static let device = TokenKind(.device)
    /// A PushKit VoIP token.
    public static let voip = TokenKind(.voip)
    /// A Live Activity push-to-start token (`Activity.pushToStartTokenUpdates`).
    public static let liveActivityStart = TokenKind(.liveActivityStart)
    /// The update token of one running Live Activity (`activity.pushTokenUpdates`).
    public static let liveActivity = TokenKind(.liveActivity)
    /// A WidgetKit push token.
    public static let widgets = TokenKind(.widgets)
    /// A controls push token (iOS 18+).
    public static let controls = TokenKind(.controls)
    /// A Location Push Service Extension token.
    public static let location = TokenKind(.location)
    /// A Push to Talk channel token.
    public static let pushToTalk = TokenKind(.pushToTalk)
    /// A PushKit complication token (watchOS).
    public static let complication = TokenKind(.complication)
    /// A PushKit File Provider token.
    public static let fileProvider = TokenKind(.fileProvider)

    /// A browser's Web Push subscription (RFC 8030): its token is the SHA-256 of the endpoint
    /// (``WebPushSubscription/token``), and it is reached through its push service, not APNs.
    public static let webPush = TokenKind(.webPush)

    /// Every kind, in the order above.
    public static let all: [TokenKind] = Base.allCases.map(TokenKind.init)

    /// Parses the wire value (`"device"`, `"liveactivity-start"`, …).
    public init?(name: some StringProtocol) {
        guard let base = Base(rawValue: String(name)) else { return nil }
        self.base = base
    }

    /// The wire value.
    public var name: String { base.rawValue }

    public var description: String { name }

    /// Whether an installation holds at most one token of this kind at a time.
    ///
    /// When an app reports a new token of such a kind for the same installation, the old one is dead (restore from
    /// backup, reinstall of the OS) and a registry replaces it. Live Activity update tokens (one per running
    /// activity) and Push to Talk tokens (one per joined channel) are the exceptions: several coexist.
    public var isOnePerInstallation: Bool {
        switch base {
        case .liveActivity, .pushToTalk: false
        default: true
        }
    }

    /// Whether the token is a Web Push subscription, sent through its push service rather than APNs.
    public var isWebPush: Bool { base == .webPush }

    /// The `apns-push-type` values a token of this kind can receive; its topic is the bundle id plus each type's suffix.
    public var pushTypes: [APNSPushType] {
        switch base {
        case .device: [.alert, .background]
        case .voip: [.voip]
        case .liveActivityStart, .liveActivity: [.liveactivity]
        case .widgets: [.widgets]
        case .controls: [.controls]
        case .location: [.location]
        case .pushToTalk: [.pushtotalk]
        case .complication: [.complication]
        case .fileProvider: [.fileprovider]
        // Not an APNs address: an alert send reaches it through its push service, as a web notification
        // (docs/web-push.md); nothing else has a web equivalent.
        case .webPush: [.alert]
        }
    }
}
