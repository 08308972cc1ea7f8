public import Foundation
public import HeraldCore

/// What an app reports about one token: the input of ``TokenStore/upsert(_:)``.
///
/// It mirrors the body of `POST /api/token` (docs/api-registration.md) after parsing. Each registration describes
/// the token completely: fields left `nil` or empty clear what was stored, and `tags` and `preferredLanguages`
/// replace the stored lists.
public struct TokenRegistration: Sendable, Hashable {
    /// The push address; the registry's key.
    public var token: DeviceToken
    /// The app's bundle id, without any push-type suffix.
    public var topic: String
    /// Which APNs the token belongs to. The latest registration wins.
    public var environment: APNSEnvironment
    /// What the token is the address of.
    public var tokenKind: TokenKind
    /// The app's own id of the signed-in user. Not unique: a user may have many devices.
    public var userID: String?
    /// The id the SDK keeps per installation, which lets the registry replace a device's old token.
    public var installationID: UUID?
    /// BCP 47 tags, most preferred first.
    public var preferredLanguages: [String]
    /// The app's version string.
    public var appVersion: String?
    /// The platform the app runs on.
    public var platform: Platform?
    /// Labels to target sends with. Duplicates are dropped, keeping the first.
    public var tags: [String]
    /// The device's IANA time zone (`Europe/Paris`), for sends at a local wall-clock time.
    public var timeZone: String?
    /// For a push-to-start token (``TokenKind/liveActivityStart``): the activity attributes type it starts.
    public var activityType: String?
    /// For a Live Activity update token (``TokenKind/liveActivity``): the app's own id of the activity.
    public var activityID: String?

    /// The most bytes a topic may have.
    public static let maximumTopicBytes = 255
    /// The most bytes a user id may have.
    public static let maximumUserIDBytes = 256
    /// The most preferred languages kept.
    public static let maximumLanguages = 20
    /// The most characters of one language tag.
    public static let maximumLanguageCharacters = 35
    /// The most bytes an app version may have.
    public static let maximumAppVersionBytes = 64
    /// The most tags a registration may carry.
    public static let maximumTags = 50
    /// The most bytes a tag may have.
    public static let maximumTagBytes = 64
    /// The most bytes of a time zone id.
    public static let maximumTimeZoneBytes = 64
    /// The most bytes of an activity attributes type name.
    public static let maximumActivityTypeBytes = 256
    /// The most bytes of an activity id.
    public static let maximumActivityIDBytes = 256

    /// Whether registering this token removes the other tokens of its installation that address the same thing:
    /// the same topic and kind (``TokenKind/isOnePerInstallation``), and for Live Activity tokens the same activity
    /// id or attributes type (ActivityKit rotates them; several activities, and several types, coexist).
    public var replacesOthersOfItsInstallation: Bool {
        tokenKind.isOnePerInstallation || (tokenKind == .liveActivity && activityID != nil)
    }

    /// Whether a text is the id of a time zone this system knows, spelt as the tz database spells it (letters,
    /// digits, `_`, `-`, `+` and `/`: Foundation would read a zone id up to a NUL and ignore the rest).
    public static func isTimeZoneID(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x2D || byte == 0x2B || byte == 0x2F
        } && TimeZone(identifier: text) != nil
    }

    /// Creates a registration. Only the token, topic and environment are required.
    public init(
        token: DeviceToken, topic: String, environment: APNSEnvironment, tokenKind: TokenKind = .device,
        userID: String? = nil, installationID: UUID? = nil, preferredLanguages: [String] = [],
        appVersion: String? = nil, platform: Platform? = nil, tags: [String] = [], timeZone: String? = nil,
        activityType: String? = nil, activityID: String? = nil
    ) {
        self.token = token
        self.topic = topic
        self.environment = environment
        self.tokenKind = tokenKind
        self.userID = userID
        self.installationID = installationID
        self.preferredLanguages = preferredLanguages
        self.appVersion = appVersion
        self.platform = platform
        self.tags = tags
        self.timeZone = timeZone
        self.activityType = activityType
        self.activityID = activityID
    }

    /// The registration as a store keeps it: limits checked, duplicate tags dropped.
    ///
    /// Stores call this before writing anything, so a registration that breaks a limit changes nothing.
    /// - Throws: ``StoreError`` `.invalidRecord`, naming the field and its limit.
    public func validated() throws -> TokenRegistration {
        func invalid(_ field: String, _ rule: String) -> StoreError {
            StoreError(.invalidRecord, "The registration of token \(token.redacted) has an invalid \(field): \(rule).")
        }
        func checkBytes(_ value: String?, _ field: String, _ limit: Int) throws {
            guard let value else { return }
            guard !value.isEmpty, value.utf8.count <= limit else {
                throw invalid(field, "use 1 to \(limit) bytes")
            }
            // SQLite would keep the text only up to a NUL and PostgreSQL refuses it: never store a cut value.
            guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw invalid(field, "it has a control character (such as NUL)")
            }
        }
        try checkBytes(topic, "topic", Self.maximumTopicBytes)
        guard !topic.contains(where: \.isWhitespace) else {
            throw invalid("topic", "a bundle id has no whitespace")
        }
        try checkBytes(userID, "userId", Self.maximumUserIDBytes)
        try checkBytes(appVersion, "appVersion", Self.maximumAppVersionBytes)
        try checkBytes(timeZone, "timeZone", Self.maximumTimeZoneBytes)
        if let timeZone, !Self.isTimeZoneID(timeZone) {
            throw invalid("timeZone", "use an IANA time zone id such as Europe/Paris")
        }
        try checkBytes(activityType, "activityType", Self.maximumActivityTypeBytes)
        try checkBytes(activityID, "activityId", Self.maximumActivityIDBytes)
        if activityType != nil, tokenKind != .liveActivityStart {
            throw invalid("activityType", "only a push-to-start token (liveactivity-start) names an activity type")
        }
        if activityID != nil, tokenKind != .liveActivity {
            throw invalid("activityId", "only a Live Activity update token (liveactivity) names an activity")
        }
        guard preferredLanguages.count <= Self.maximumLanguages else {
            throw invalid("preferredLanguages", "send at most \(Self.maximumLanguages) languages")
        }
        for language in preferredLanguages {
            guard (1...Self.maximumLanguageCharacters).contains(language.count),
                language.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" })
            else {
                throw invalid(
                    "preferredLanguages",
                    "each is a BCP 47 tag of 1 to \(Self.maximumLanguageCharacters) letters, digits and '-'"
                )
            }
        }
        var copy = self
        var seen = Set<String>()
        copy.tags = tags.filter { seen.insert($0).inserted }
        guard copy.tags.count <= Self.maximumTags else {
            throw invalid("tags", "send at most \(Self.maximumTags) tags")
        }
        for tag in copy.tags { try checkBytes(tag, "tags", Self.maximumTagBytes) }
        return copy
    }
}
