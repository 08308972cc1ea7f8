import Crypto
public import Foundation

/// One Web Push message before encryption: its JSON and the RFC 8030 headers it goes with.
///
/// Made from the same notification an app's devices get (``declarative(from:navigate:priority:expiration:collapseID:language:now:)``),
/// in the Declarative Web Push format Safari shows without a service worker, and which other browsers hand to the
/// page's service worker (docs/web-push.md, "What a web notification carries").
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

    /// The members of the payload Herald writes itself; an app's custom keys may not use them.
    public static let reservedKeys: Set<String> = ["web_push", "notification", "mutable", "app_badge"]

    public init(payload: [UInt8], ttl: Int, urgency: Urgency = .normal, topic: String? = nil) {
        self.payload = payload
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }

    /// A notification as Declarative Web Push: `{"web_push": 8030, "notification": {"title", "body", "navigate",
    /// "lang", "silent", "tag", "timestamp"}, "app_badge", "mutable"}`, the payload's custom keys (such as the `herald`
    /// receipt key) beside them for a service worker.
    /// - Parameters:
    ///   - navigate: Where a click opens: an `https` URL (required by the format).
    ///   - collapseID: Becomes the notification's `tag` (it replaces a shown one with the same tag) and the `Topic`
    ///     (hashed when it is not 1–32 base64url characters).
    ///   - language: The BCP 47 tag of the text, for `lang`.
    /// - Throws: ``WebPushError`` `notRenderable` (no visible text, or text only as localization keys a browser cannot
    ///   look up), `invalidNavigate`, or `payloadTooLarge`.
    public static func declarative(
        from payload: Payload, navigate: String, priority: APNSPriority? = nil, expiration: APNSExpiration? = nil,
        collapseID: String? = nil, language: String? = nil, now: Date
    ) throws(WebPushError) -> WebPushMessage {
        guard let url = URL(string: navigate), url.scheme == "https", url.host?.isEmpty == false else {
            throw WebPushError(
                .invalidNavigate,
                "A web notification opens an https URL (\"navigate\"), and \"\(navigate.prefix(80))\" is not one: give the page to open, or configure the app's web origin.")
        }
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
            "title": .string(title), "navigate": .string(navigate),
            "timestamp": .integer(Int((now.timeIntervalSince1970 * 1000).rounded(.down))),
        ]
        if content?.title?.text != nil, let body = content?.body?.text, !body.isEmpty {
            notification["body"] = .string(body)
        }
        if let language, !language.isEmpty { notification["lang"] = .string(language) }
        if payload.aps.sound == nil { notification["silent"] = .bool(true) }
        if let collapseID { notification["tag"] = .string(collapseID) }
        var message: [String: JSONValue] = payload.custom.filter { !reservedKeys.contains($0.key) }
        message["web_push"] = .integer(8030)
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
