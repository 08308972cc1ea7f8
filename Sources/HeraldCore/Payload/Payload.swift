/// A notification body: the `aps` dictionary APNs reads, plus the app's own keys beside it.
///
/// Build one with the typed fields and encode it with ``jsonBytes()``, or decode any JSON object with
/// ``init(jsonBytes:)``; a decoded payload encodes back to the same JSON structure.
///
/// ```swift
/// var payload = Payload(alert: .init(title: "Your food is done.", body: "Be careful, it's really hot!"))
/// payload.aps.badge = 12
/// payload.custom["orderID"] = "A-1042"
/// ```
public struct Payload: Sendable, Hashable {
    /// The system keys.
    public var aps: APS
    /// Whether the encoding has an `aps` key even when ``aps`` is empty. File Provider and MDM payloads have none.
    public var includesAPS: Bool
    /// Keys beside `aps`, delivered to the app in `userInfo`.
    public var custom: [String: JSONValue]

    public init(aps: APS = APS(), custom: [String: JSONValue] = [:], includesAPS: Bool = true) {
        self.aps = aps
        self.custom = custom
        self.includesAPS = includesAPS
    }

    /// A visible notification with a title and body.
    public init(alert: AlertContent, badge: Int? = nil, sound: Sound? = nil, custom: [String: JSONValue] = [:]) {
        self.init(aps: APS(alert: .content(alert), badge: badge, sound: sound), custom: custom)
    }

    /// A silent background push: `{"aps":{"content-available":1}}` plus custom keys.
    public static func background(custom: [String: JSONValue] = [:]) -> Payload {
        Payload(aps: APS(contentAvailable: true), custom: custom)
    }

    /// The body of `widgets` and `controls` pushes: `{"aps":{"content-changed":true}}`.
    public static let contentChanged = Payload(aps: APS(contentChanged: true))
}

/// The `aps` dictionary: every key APNs and the system read.
public struct APS: Sendable, Hashable {
    /// What to show: a plain body or a dictionary of title, subtitle, body and localization keys.
    public var alert: Alert?
    /// The app icon badge; 0 removes it, `nil` leaves it unchanged.
    public var badge: Int?
    /// A sound name (`"default"`) or a critical-alert sound.
    public var sound: Sound?
    /// Groups related notifications.
    public var threadID: String?
    /// The identifier of a registered notification category, which selects action buttons.
    public var category: String?
    /// `content-available: 1`: wakes the app in the background.
    public var contentAvailable: Bool
    /// `mutable-content: 1`: passes the notification through the app's notification service extension.
    public var mutableContent: Bool
    /// The window or scene to bring forward.
    public var targetContentID: String?
    /// How urgently to interrupt the user.
    public var interruptionLevel: InterruptionLevel?
    /// 0…1 for notifications (the highest is featured in the summary); any number for Live Activities.
    public var relevanceScore: Double?
    /// Evaluated by the app's Focus filter.
    public var filterCriteria: String?

    // Live Activities.
    /// Live Activity: when the content becomes outdated, in seconds since 1970.
    public var staleDate: Int?
    /// Live Activity: the new dynamic state, decoded by the app as its `ContentState`.
    public var contentState: [String: JSONValue]?
    /// Live Activity: when the update was sent, in seconds since 1970.
    public var timestamp: Int?
    /// Live Activity: start, update or end.
    public var event: LiveActivityEvent?
    /// Live Activity end: when the ended activity leaves the Lock Screen, in seconds since 1970.
    public var dismissalDate: Int?
    /// Live Activity start: the name of the `ActivityAttributes` type.
    public var attributesType: String?
    /// Live Activity start: the static attributes.
    public var attributes: [String: JSONValue]?
    /// Live Activity start (iOS 18+): ask the new activity for an update push token.
    public var inputPushToken: Bool
    /// Live Activity start (iOS 18+): subscribe the new activity to this broadcast channel.
    public var inputPushChannel: String?

    /// Widgets and controls: tells WidgetKit to reload.
    public var contentChanged: Bool?
    /// Safari web push only.
    public var urlArgs: [String]?
    /// Any other `aps` key (for example `ptt-push-type`), kept so a decoded payload encodes back unchanged.
    public var additional: [String: JSONValue]

    public init(
        alert: Alert? = nil, badge: Int? = nil, sound: Sound? = nil, threadID: String? = nil,
        category: String? = nil, contentAvailable: Bool = false, mutableContent: Bool = false,
        targetContentID: String? = nil, interruptionLevel: InterruptionLevel? = nil, relevanceScore: Double? = nil,
        filterCriteria: String? = nil, staleDate: Int? = nil, contentState: [String: JSONValue]? = nil,
        timestamp: Int? = nil, event: LiveActivityEvent? = nil, dismissalDate: Int? = nil,
        attributesType: String? = nil, attributes: [String: JSONValue]? = nil, inputPushToken: Bool = false,
        inputPushChannel: String? = nil, contentChanged: Bool? = nil, urlArgs: [String]? = nil,
        additional: [String: JSONValue] = [:]
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.filterCriteria = filterCriteria
        self.staleDate = staleDate
        self.contentState = contentState
        self.timestamp = timestamp
        self.event = event
        self.dismissalDate = dismissalDate
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
        self.contentChanged = contentChanged
        self.urlArgs = urlArgs
        self.additional = additional
    }

    /// Whether the notification shows the user anything: an alert, a badge or a sound.
    public var isVisible: Bool {
        (alert.map { !$0.isEmpty } ?? false) || badge != nil || sound != nil
    }

    /// Whether this is a silent push: `content-available` and nothing visible.
    public var isSilent: Bool { contentAvailable && !isVisible }

    /// Whether any Live Activity key is set.
    public var hasLiveActivityKeys: Bool {
        event != nil || timestamp != nil || contentState != nil || staleDate != nil || dismissalDate != nil
            || attributesType != nil || attributes != nil || inputPushToken || inputPushChannel != nil
    }
}

/// The `alert` value: a string shown as the body, or a dictionary.
public enum Alert: Sendable, Hashable {
    /// `"alert": "text"`: shown as the body.
    case body(String)
    /// `"alert": {…}`.
    case content(AlertContent)

    /// Whether there is nothing to show.
    public var isEmpty: Bool {
        switch self {
        case .body(let text): text.isEmpty
        case .content(let content): content.isEmpty
        }
    }

    /// The alert as a dictionary, turning a plain string into a body.
    public var content: AlertContent {
        switch self {
        case .body(let text): AlertContent(body: .text(text))
        case .content(let content): content
        }
    }
}

/// The keys of the `alert` dictionary.
public struct AlertContent: Sendable, Hashable {
    public var title: AlertText?
    public var subtitle: AlertText?
    public var body: AlertText?
    public var launchImage: String?
    public var titleLocKey: String?
    public var titleLocArgs: [String]?
    public var subtitleLocKey: String?
    public var subtitleLocArgs: [String]?
    public var locKey: String?
    public var locArgs: [String]?
    /// Live Activity alerts carry their sound inside `alert`.
    public var sound: Sound?
    /// Other alert keys (`action-loc-key`, `summary-arg`, …), kept for round trips.
    public var additional: [String: JSONValue]

    public init(
        title: AlertText? = nil, subtitle: AlertText? = nil, body: AlertText? = nil, launchImage: String? = nil,
        titleLocKey: String? = nil, titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil,
        subtitleLocArgs: [String]? = nil, locKey: String? = nil, locArgs: [String]? = nil, sound: Sound? = nil,
        additional: [String: JSONValue] = [:]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.launchImage = launchImage
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.subtitleLocKey = subtitleLocKey
        self.subtitleLocArgs = subtitleLocArgs
        self.locKey = locKey
        self.locArgs = locArgs
        self.sound = sound
        self.additional = additional
    }

    /// Plain-text convenience: `AlertContent(title: "Hi", body: "There")`.
    public init(title: String?, subtitle: String? = nil, body: String?) {
        self.init(title: title.map { AlertText.text($0) }, subtitle: subtitle.map { AlertText.text($0) }, body: body.map { AlertText.text($0) })
    }

    /// Whether nothing would be shown: no title, subtitle or body, plain or localized.
    public var isEmpty: Bool {
        (title?.isEmpty ?? true) && (subtitle?.isEmpty ?? true) && (body?.isEmpty ?? true) && titleLocKey == nil
            && subtitleLocKey == nil && locKey == nil
    }
}

/// An alert title, subtitle or body: plain text, or (in Live Activity alerts) a localization key with arguments.
public enum AlertText: Sendable, Hashable, ExpressibleByStringLiteral {
    case text(String)
    case localized(key: String, arguments: [String])

    public init(stringLiteral value: String) { self = .text(value) }

    public var isEmpty: Bool {
        switch self {
        case .text(let text): text.isEmpty
        case .localized(let key, _): key.isEmpty
        }
    }

    /// The plain text, or `nil` for a localized value.
    public var text: String? { if case .text(let text) = self { text } else { nil } }
}

/// The `sound` value.
public enum Sound: Sendable, Hashable, ExpressibleByStringLiteral {
    /// A sound file in the app bundle or `Library/Sounds`, or `"default"`.
    case named(String)
    /// A critical-alert sound dictionary (needs Apple's critical-alerts entitlement).
    case critical(CriticalSound)

    /// The system sound.
    public static let `default` = Sound.named("default")

    public init(stringLiteral value: String) { self = .named(value) }
}

/// The critical-alert `sound` dictionary.
public struct CriticalSound: Sendable, Hashable {
    /// The sound file, or `"default"`.
    public var name: String?
    /// 0.0 (silent) … 1.0 (full).
    public var volume: Double?
    /// `critical: 1`.
    public var isCritical: Bool

    public init(name: String? = "default", volume: Double? = nil, isCritical: Bool = true) {
        self.name = name
        self.volume = volume
        self.isCritical = isCritical
    }
}

/// The `interruption-level` value.
public enum InterruptionLevel: String, Sendable, Hashable, CaseIterable {
    case passive
    case active
    case timeSensitive = "time-sensitive"
    case critical
}

/// The Live Activity `event` value.
public enum LiveActivityEvent: String, Sendable, Hashable, CaseIterable {
    case start
    case update
    case end
}
