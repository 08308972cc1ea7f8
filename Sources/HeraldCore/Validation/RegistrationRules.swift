/// The rules a device registration's fields follow (docs/api-registration.md), written once.
///
/// The server's parser, the store and the SDK all check a registration with ``check(_:)``, so a registration the SDK
/// lets through is one the server accepts: an SDK that queued what the server refuses would retry it forever.
/// Each layer adds only what it alone can know: the server and the store whether the time zone exists in their
/// time-zone database, the store that it drops duplicate tags.
public enum RegistrationRules {
    /// The most bytes a registration body may have; larger bodies are answered with 413. A registration that keeps
    /// every rule below is far smaller.
    public static let maximumBodyBytes = 16 * 1024
    /// The most bytes a topic (bundle id) may have.
    public static let maximumTopicBytes = 255
    /// The most bytes a user id may have.
    public static let maximumUserIDBytes = 256
    /// The most bytes an app version may have.
    public static let maximumAppVersionBytes = 64
    /// The most preferred languages a registration may list.
    public static let maximumLanguages = 20
    /// The most bytes of one language tag.
    public static let maximumLanguageTagBytes = 35
    /// The most tags a registration may carry.
    public static let maximumTags = 50
    /// The most bytes a tag may have.
    public static let maximumTagBytes = 64
    /// The most bytes of a time zone id. The longest IANA id today has 32.
    public static let maximumTimeZoneBytes = 64
    /// The most bytes of an activity attributes type name.
    public static let maximumActivityTypeBytes = 256
    /// The most bytes of an activity id.
    public static let maximumActivityIDBytes = 256

    /// The fields of a registration that have rules, as their JSON names call them.
    public struct Fields: Sendable, Hashable {
        public var topic: String?
        public var userID: String?
        public var appVersion: String?
        public var preferredLanguages: [String]
        public var tags: [String]
        public var timeZone: String?
        public var tokenKind: TokenKind
        public var activityType: String?
        public var activityID: String?

        public init(
            topic: String?, userID: String?, appVersion: String?, preferredLanguages: [String], tags: [String],
            timeZone: String?, tokenKind: TokenKind, activityType: String?, activityID: String?
        ) {
            self.topic = topic
            self.userID = userID
            self.appVersion = appVersion
            self.preferredLanguages = preferredLanguages
            self.tags = tags
            self.timeZone = timeZone
            self.tokenKind = tokenKind
            self.activityType = activityType
            self.activityID = activityID
        }
    }

    /// The first rule a registration breaks: the field's JSON name and what it must be.
    public struct Violation: Error, Sendable, Hashable, CustomStringConvertible {
        /// The field's name in the JSON body, such as `userId`.
        public let field: String
        /// What the field must be, worded to follow "is invalid: ", with an example.
        public let rule: String

        public var description: String { "The field \"\(field)\" is invalid: \(rule)." }
    }

    /// Checks every rule, fields in body order.
    ///
    /// - Parameter requiresKindFields: whether a Live Activity token must name its activity (update tokens) or type
    ///   (push-to-start tokens). The API and the SDK require them; a store keeps records without them, which apps
    ///   registered before the fields existed.
    /// - Throws: the first ``Violation``.
    public static func check(_ fields: Fields, requiresKindFields: Bool = true) throws(Violation) {
        if let topic = fields.topic {
            try checkText(
                topic, field: "topic", maximumBytes: maximumTopicBytes, allowsWhitespace: false,
                rule: "it is the app's bundle id, such as com.example.app")
        }
        if let userID = fields.userID {
            try checkText(
                userID, field: "userId", maximumBytes: maximumUserIDBytes, allowsWhitespace: true,
                rule: "it is the app's id of the signed-in user; leave it out when no one is signed in")
        }
        if let appVersion = fields.appVersion {
            try checkText(
                appVersion, field: "appVersion", maximumBytes: maximumAppVersionBytes, allowsWhitespace: true,
                rule: "it is the app's version, such as 2.4.1")
        }
        guard fields.preferredLanguages.count <= maximumLanguages else {
            throw Violation(
                field: "preferredLanguages", rule: "send at most \(maximumLanguages) languages, most preferred first")
        }
        for language in fields.preferredLanguages where !isLanguageTag(language) {
            throw Violation(
                field: "preferredLanguages",
                rule:
                    "each entry is a BCP 47 tag of 1 to \(maximumLanguageTagBytes) letters, digits and '-', such as en, pt-BR or zh-Hans-CN (Locale.preferredLanguages)"
            )
        }
        guard fields.tags.count <= maximumTags else {
            throw Violation(field: "tags", rule: "send at most \(maximumTags) tags")
        }
        for tag in fields.tags {
            try checkText(
                tag, field: "tags", maximumBytes: maximumTagBytes, allowsWhitespace: true,
                rule: "each tag is a label such as beta")
        }
        if let timeZone = fields.timeZone, !hasTimeZoneShape(timeZone) {
            throw Violation(
                field: "timeZone",
                rule:
                    "use an IANA time zone id such as Europe/Paris or Asia/Tokyo (TimeZone.current.identifier), or leave it out"
            )
        }
        try checkKindField(
            fields.activityType, field: "activityType", of: fields.tokenKind, belongsTo: .liveActivityStart,
            maximumBytes: maximumActivityTypeBytes, allowsWhitespace: false, required: requiresKindFields,
            missing:
                "a push-to-start token (\"tokenKind\": \"liveactivity-start\") needs the name of the ActivityAttributes type it starts, such as DeliveryAttributes",
            rule: "it is the ActivityAttributes type's name, such as DeliveryAttributes")
        try checkKindField(
            fields.activityID, field: "activityId", of: fields.tokenKind, belongsTo: .liveActivity,
            maximumBytes: maximumActivityIDBytes, allowsWhitespace: true, required: requiresKindFields,
            missing:
                "a Live Activity update token (\"tokenKind\": \"liveactivity\") needs the app's id of its activity, such as order-1042",
            rule: "it is the app's id of the activity, such as order-1042")
    }

    /// Whether a text has the shape of an IANA time zone id: 1 to ``maximumTimeZoneBytes`` ASCII letters, digits and
    /// `/ _ - +`, not beginning or ending with `/` (`Asia/Tokyo`, `America/Argentina/Buenos_Aires`, `Etc/GMT+9`,
    /// `UTC`). Whether the zone exists is for the time-zone database of whoever uses it.
    public static func hasTimeZoneShape(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumTimeZoneBytes, bytes.first != UInt8(ascii: "/"),
            bytes.last != UInt8(ascii: "/")
        else { return false }
        return bytes.allSatisfy { byte in
            isASCIIAlphanumeric(byte) || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
        }
    }

    /// Whether a text has a Unicode control character (category Cc: U+0000–U+001F, U+007F–U+009F). SQLite would keep
    /// such a text only up to a NUL and PostgreSQL refuses it, so no stored field may have one.
    public static func hasControlCharacter(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Whether a text has the shape of a BCP 47 language tag: 1 to ``maximumLanguageTagBytes`` ASCII letters, digits
    /// and `-`.
    public static func isLanguageTag(_ text: String) -> Bool {
        (1...maximumLanguageTagBytes).contains(text.utf8.count)
            && text.utf8.allSatisfy { isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "-") }
    }

    private static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    /// A free-text field: 1 to `maximumBytes` bytes, no control character, and no whitespace where it names a thing.
    private static func checkText(
        _ text: String, field: String, maximumBytes: Int, allowsWhitespace: Bool, rule: String
    ) throws(Violation) {
        guard (1...maximumBytes).contains(text.utf8.count) else {
            throw Violation(field: field, rule: "it must have 1 to \(maximumBytes) bytes; \(rule)")
        }
        guard !hasControlCharacter(text) else {
            throw Violation(
                field: field, rule: "it has a control character (such as NUL or a line break): send plain text")
        }
        guard allowsWhitespace || !text.contains(where: \.isWhitespace) else {
            throw Violation(field: field, rule: "it has no whitespace; \(rule)")
        }
    }

    /// A field that one token kind requires and every other kind refuses.
    private static func checkKindField(
        _ value: String?, field: String, of kind: TokenKind, belongsTo owner: TokenKind, maximumBytes: Int,
        allowsWhitespace: Bool, required: Bool, missing: String, rule: String
    ) throws(Violation) {
        guard kind == owner else {
            guard value == nil else {
                throw Violation(
                    field: field,
                    rule: "only a \(owner.name) token has one; leave it out for a \(kind.name) token")
            }
            return
        }
        guard let value else {
            if required { throw Violation(field: field, rule: missing) }
            return
        }
        try checkText(value, field: field, maximumBytes: maximumBytes, allowsWhitespace: allowsWhitespace, rule: rule)
    }
}

/// A registration's fields as the SDK sends them and the registration API reads them: what ``RegistrationRules``
/// checks, so that the SDK never sends what the server would refuse.
public protocol RegistrationRuleFields {
    var topic: String? { get }
    var userID: String? { get }
    var appVersion: String? { get }
    var preferredLanguages: [String] { get }
    var tags: [String] { get }
    var timeZone: String? { get }
    var tokenKind: TokenKind { get }
    var activityType: String? { get }
    var activityID: String? { get }
}

extension RegistrationRuleFields {
    /// Checks the fields against every rule, the kind's own fields required.
    /// - Throws: the first ``RegistrationRules/Violation``.
    public func checkRegistrationRules() throws(RegistrationRules.Violation) {
        try RegistrationRules.check(
            RegistrationRules.Fields(
                topic: topic, userID: userID, appVersion: appVersion, preferredLanguages: preferredLanguages, tags: tags,
                timeZone: timeZone, tokenKind: tokenKind, activityType: activityType, activityID: activityID))
    }
}
