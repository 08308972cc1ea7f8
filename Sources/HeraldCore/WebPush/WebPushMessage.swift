import Crypto
public import Foundation

/// One Web Push message before encryption: its JSON and the RFC 8030 headers it goes with.
///
/// Made from the same notification an app's devices get
/// (``make(_:from:navigate:priority:expiration:collapseID:language:now:)``), in the Declarative Web Push format Safari
/// shows without a service worker and other browsers hand to the page's service worker, or in the classic one every
/// browser hands to it (docs/web-push.md, "What a web notification carries").
public struct WebPushMessage: Sendable, Hashable {
    /// The plaintext: JSON, at most ``WebPushEncryption/maximumPlaintextBytes``.
    public var payload: [UInt8]
    /// `TTL`: seconds the push service may keep the message for an offline browser.
    public var ttl: Int
    /// `Urgency`.
    public var urgency: Urgency
    /// `Topic`: a newer message with the same topic replaces one not yet delivered.
    public var topic: String?

    /// RFC 8030 §5.3.
    public enum Urgency: String, Sendable, Hashable, CaseIterable {
        case veryLow = "very-low"
        case low
        case normal
        case high

        /// APNs's priority in web terms: 10 (and none: APNs's default) is `high`, 5 `normal`, 1 `low`.
        public init(_ priority: APNSPriority?) {
            switch priority {
            case .none, .immediate?: self = .high
            case .considerPower?: self = .normal
            case .prioritizePowerOver?: self = .low
            }
        }
    }

    /// What a message with no `apns-expiration` is kept for: four weeks, the longest the push services keep one.
    public static let defaultTTL = 2_419_200

    /// How an app's web messages are written (docs/web-push.md, "What a web notification carries").
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// Declarative Web Push (`{"web_push": 8030, "notification": {…}}`): Safari shows it without a service worker,
        /// and other browsers hand it to the page's service worker.
        case declarative
        /// The same `notification` without the `web_push` member: every browser, Safari too, hands it to the site's
        /// service worker (`herald-sw.js`, or the site's own), which must show it. Its link is optional.
        case classic
    }

    /// The members of the payload Herald writes itself; an app's custom keys may not use them.
    public static let reservedKeys: Set<String> = ["web_push", "notification", "mutable", "app_badge"]

    /// The custom key of a send's payload whose `https` URL a click opens (`notification.navigate`).
    public static let navigateKey = "navigate"
    /// The custom key whose `auto`, `ltr` or `rtl` is the notification's text direction (`notification.dir`).
    public static let directionKey = "dir"
    /// The custom key whose buttons a web notification shows (`notification.actions`): up to
    /// ``maximumActions`` objects of `action` (an id), `title` and `navigate`.
    public static let actionsKey = "actions"
    /// What browsers show: `Notification.maxActions` is 2 in Chrome, Edge and Firefox.
    public static let maximumActions = 2

    /// The primary language subtags written right to left: a variant in one of them is `dir: rtl` unless the send says
    /// otherwise.
    static let rightToLeftLanguages: Set<String> = [
        "ar", "arc", "ckb", "dv", "fa", "he", "iw", "ks", "ku", "ps", "sd", "ug", "ur", "yi",
    ]

    public init(payload: [UInt8], ttl: Int, urgency: Urgency = .normal, topic: String? = nil) {
        self.payload = payload
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }

    /// A notification as Declarative Web Push; ``make(_:from:navigate:priority:expiration:collapseID:language:now:)``
    /// with ``Format/declarative``.
    public static func declarative(
        from payload: Payload, navigate: String?, priority: APNSPriority? = nil, expiration: APNSExpiration? = nil,
        collapseID: String? = nil, language: String? = nil, now: Date
    ) throws(WebPushError) -> WebPushMessage {
        try make(
            .declarative, from: payload, navigate: navigate, priority: priority, expiration: expiration,
            collapseID: collapseID, language: language, now: now)
    }

    /// A notification as a web message: `{"web_push": 8030, "notification": {"title", "body", "navigate", "lang",
    /// "dir", "silent", "tag", "timestamp", "actions"}, "app_badge", "mutable"}` (``Format/classic`` leaves out
    /// `web_push`), the payload's other custom keys (such as the `herald` receipt key) beside them for a service worker.
    /// - Parameters:
    ///   - navigate: Where a click opens when the payload's ``navigateKey`` names no page: an `https` URL (required by
    ///     the declarative format).
    ///   - collapseID: Becomes the notification's `tag` (it replaces a shown one with the same tag) and the `Topic`
    ///     (hashed when it is not 1–32 base64url characters).
    ///   - language: The BCP 47 tag of the text, for `lang` (and `dir: rtl` for a language written right to left).
    /// - Throws: ``WebPushError`` `notRenderable` (no visible text, or text only as localization keys a browser cannot
    ///   look up), `invalidNavigate`, `invalidDirection`, `invalidActions`, or `payloadTooLarge`.
    public static func make(
        _ format: Format, from payload: Payload, navigate: String?, priority: APNSPriority? = nil,
        expiration: APNSExpiration? = nil, collapseID: String? = nil, language: String? = nil, now: Date
    ) throws(WebPushError) -> WebPushMessage {
        var custom = payload.custom
        let link = try self.link(custom.removeValue(forKey: navigateKey), fallback: navigate, format: format)
        let direction = try self.direction(custom.removeValue(forKey: directionKey), language: language)
        let actions = try self.actions(custom.removeValue(forKey: actionsKey), format: format)
        let content = payload.aps.alert?.content
        if content?.title?.text == nil && content?.body?.text == nil
            && (content?.title != nil || content?.body != nil || content?.titleLocKey != nil)
        {
            throw WebPushError(
                .notRenderable,
                "The alert's text is a localization key, which a browser cannot look up: send the text itself (\"localizations\" gives one per language).")
        }
        let title = content?.title?.text ?? content?.body?.text
        guard let title, !title.isEmpty else {
            throw WebPushError(
                .notRenderable,
                "A web notification shows a title or a body, and this one has neither: a background push has no web equivalent.")
        }
        var notification: [String: JSONValue] = [
            "title": .string(title),
            "timestamp": .integer(Int((now.timeIntervalSince1970 * 1000).rounded(.down))),
        ]
        if let link { notification["navigate"] = .string(link) }
        if content?.title?.text != nil, let body = content?.body?.text, !body.isEmpty {
            notification["body"] = .string(body)
        }
        if let language, !language.isEmpty { notification["lang"] = .string(language) }
        if let direction { notification["dir"] = .string(direction) }
        if payload.aps.sound == nil { notification["silent"] = .bool(true) }
        if let collapseID { notification["tag"] = .string(collapseID) }
        if let actions { notification["actions"] = actions }
        var message: [String: JSONValue] = custom.filter { !reservedKeys.contains($0.key) }
        if format == .declarative { message["web_push"] = .integer(8030) }
        message["notification"] = .object(notification)
        if let badge = payload.aps.badge { message["app_badge"] = .integer(badge) }
        if payload.aps.mutableContent { message["mutable"] = .bool(true) }
        let bytes = JSONValue.object(message).jsonBytes
        guard bytes.count <= WebPushEncryption.maximumPlaintextBytes else {
            throw WebPushError(
                .payloadTooLarge,
                "The web notification is \(bytes.count) bytes of JSON: one Web Push message carries at most \(WebPushEncryption.maximumPlaintextBytes). Shorten its text or custom keys.")
        }
        return WebPushMessage(
            payload: bytes, ttl: ttl(for: expiration, now: now), urgency: Urgency(priority),
            topic: collapseID.map(topic(for:)))
    }

    /// Whether a text is an `https` URL with a host: what a notification or an action may open.
    static func isLink(_ text: String) -> Bool {
        guard let url = URL(string: text), url.scheme == "https", let host = url.host else { return false }
        return !host.isEmpty
    }

    /// The page a click opens: the payload's, else the fallback; required by the declarative format.
    private static func link(_ given: JSONValue?, fallback: String?, format: Format) throws(WebPushError) -> String? {
        if let given {
            guard let text = given.stringValue, isLink(text) else {
                throw WebPushError(
                    .invalidNavigate,
                    "\"\(navigateKey)\" is the https URL a web notification opens, such as https://example.com/orders/42, and this one is \(given.jsonString.prefix(80)).")
            }
            return text
        }
        guard let fallback else {
            guard format == .classic else {
                throw WebPushError(
                    .invalidNavigate,
                    "A web notification opens a page, and this one names none: put its https URL in the send's \"data\": {\"navigate\": …}, or configure the app's web origin (HERALD_WEB_ORIGIN).")
            }
            return nil
        }
        guard isLink(fallback) else {
            throw WebPushError(
                .invalidNavigate,
                "A web notification opens an https URL (\"navigate\"), and \"\(fallback.prefix(80))\" is not one: give the page to open, or configure the app's web origin.")
        }
        return fallback
    }

    /// The text's direction: the payload's `dir`, else `rtl` for a language written right to left, else none (`auto`).
    private static func direction(_ given: JSONValue?, language: String?) throws(WebPushError) -> String? {
        if let given {
            guard let text = given.stringValue, ["auto", "ltr", "rtl"].contains(text) else {
                throw WebPushError(
                    .invalidDirection,
                    "\"\(directionKey)\" is the direction of the notification's text: auto, ltr or rtl, not \(given.jsonString.prefix(40)).")
            }
            return text
        }
        guard let primary = language?.split(separator: "-").first?.lowercased(),
            rightToLeftLanguages.contains(primary)
        else { return nil }
        return "rtl"
    }

    /// The payload's buttons, checked: each an `action` id, a `title` and (declarative) an `https` `navigate`.
    private static func actions(_ given: JSONValue?, format: Format) throws(WebPushError) -> JSONValue? {
        guard let given else { return nil }
        let shape =
            "\"\(actionsKey)\" lists up to \(maximumActions) buttons, each {\"action\": an id, \"title\": its text, \"navigate\": the https URL it opens}"
        guard case .array(let list) = given, (1...maximumActions).contains(list.count) else {
            throw WebPushError(
                .invalidActions,
                "\(shape); browsers show at most \(maximumActions) (Notification.maxActions).")
        }
        var checked: [JSONValue] = []
        for (index, entry) in list.enumerated() {
            guard case .object(let members) = entry, let action = members["action"]?.stringValue, !action.isEmpty,
                action.utf8.count <= 64, let title = members["title"]?.stringValue, !title.isEmpty
            else {
                throw WebPushError(.invalidActions, "\(shape): entry \(index) is \(entry.jsonString.prefix(80)).")
            }
            var button: [String: JSONValue] = ["action": .string(action), "title": .string(title)]
            if let navigate = members["navigate"] {
                guard let link = navigate.stringValue, isLink(link) else {
                    throw WebPushError(
                        .invalidActions, "\(shape): entry \(index)'s navigate is not an https URL.")
                }
                button["navigate"] = .string(link)
            } else if format == .declarative {
                throw WebPushError(
                    .invalidActions,
                    "\(shape): entry \(index) has no navigate, which Declarative Web Push requires of every button.")
            }
            checked.append(.object(button))
        }
        return .array(checked)
    }

    /// `apns-expiration` as a TTL: none is ``defaultTTL``, `0` is `0` (deliver now or never), a time is the seconds
    /// left until it (never negative).
    public static func ttl(for expiration: APNSExpiration?, now: Date) -> Int {
        guard let expiration else { return defaultTTL }
        guard expiration.secondsSince1970 != 0 else { return 0 }
        return max(0, min(defaultTTL, expiration.secondsSince1970 - Int(now.timeIntervalSince1970.rounded(.down))))
    }

    /// A collapse id as a `Topic`: itself when it is 1–32 base64url characters, else the first 32 characters of its
    /// SHA-256 in base64url (the same id, the same topic).
    public static func topic(for collapseID: String) -> String {
        let fits =
            (1...32).contains(collapseID.utf8.count)
            && collapseID.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
        if fits { return collapseID }
        return String(Base64URL.encode(Array(SHA256.hash(data: Data(collapseID.utf8)))).prefix(32))
    }
}
