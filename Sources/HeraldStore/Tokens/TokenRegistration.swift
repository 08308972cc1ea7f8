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
    /// Whether the person allows the app's Live Activities (ActivityKit's `areActivitiesEnabled`), as the device last
    /// reported; `nil` when it did not. A Live Activity push skips a token whose device said no.
    public var activitiesEnabled: Bool?
    /// Whether the person allows frequent Live Activity updates (ActivityKit's `frequentPushesEnabled`); `nil` when not
    /// reported. A priority-10 update goes at priority 5 to a token whose device said no.
    public var frequentPushesEnabled: Bool?
    /// For a Web Push subscription (``TokenKind/webPush``): its endpoint and keys; its ``token`` is the endpoint's
    /// (``HeraldCore/WebPushSubscription/token``). `nil` for every other kind.
    public var webPush: WebPushSubscription?

    /// Whether registering this token removes the other tokens of its installation that address the same thing:
    /// the same topic and kind (``TokenKind/isOnePerInstallation``), and for Live Activity tokens the same activity
    /// id or attributes type (ActivityKit rotates them; several activities, and several types, coexist).
    public var replacesOthersOfItsInstallation: Bool {
        tokenKind.isOnePerInstallation || (tokenKind == .liveActivity && activityID != nil)
    }

    /// Whether a text is the id of a time zone this system knows, spelt as the tz database spells it
    /// (``HeraldCore/RegistrationRules/hasTimeZoneShape(_:)``: Foundation would read a zone id up to a NUL and ignore
    /// the rest).
    public static func isTimeZoneID(_ text: String) -> Bool {
        RegistrationRules.hasTimeZoneShape(text) && TimeZone(identifier: text) != nil
    }

    /// Creates a registration. Only the token, topic and environment are required.
    public init(
        token: DeviceToken, topic: String, environment: APNSEnvironment, tokenKind: TokenKind = .device,
        userID: String? = nil, installationID: UUID? = nil, preferredLanguages: [String] = [],
        appVersion: String? = nil, platform: Platform? = nil, tags: [String] = [], timeZone: String? = nil,
        activityType: String? = nil, activityID: String? = nil, activitiesEnabled: Bool? = nil,
        frequentPushesEnabled: Bool? = nil, webPush: WebPushSubscription? = nil
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
        self.activitiesEnabled = activitiesEnabled
        self.frequentPushesEnabled = frequentPushesEnabled
        self.webPush = webPush
    }

    /// The registration as a store keeps it: the rules of ``HeraldCore/RegistrationRules`` checked, the time zone
    /// known to this system, duplicate tags dropped.
    ///
    /// Stores call this before writing anything, so a registration that breaks a rule changes nothing.
    /// - Throws: ``StoreError`` `.invalidRecord`, naming the field and its rule.
    public func validated() throws -> TokenRegistration {
        func invalid(_ rule: String) -> StoreError {
            StoreError(.invalidRecord, "The registration of token \(token.redacted) is refused: \(rule)")
        }
        do {
            try RegistrationRules.check(
                RegistrationRules.Fields(
                    topic: topic, userID: userID, appVersion: appVersion, preferredLanguages: preferredLanguages,
                    tags: tags, timeZone: timeZone, tokenKind: tokenKind, activityType: activityType,
                    activityID: activityID),
                requiresKindFields: false)
        } catch {
            throw invalid(error.description)
        }
        if let timeZone, !Self.isTimeZoneID(timeZone) {
            throw invalid("this system's time-zone database has no zone \(timeZone).")
        }
        switch (tokenKind.isWebPush, webPush) {
        case (true, nil):
            throw invalid("a webpush token needs its subscription (endpoint and keys).")
        case (false, _?):
            throw invalid("only a webpush token has a subscription; a \(tokenKind.name) token is an APNs address.")
        case (true, let subscription?) where subscription.token != token:
            throw invalid("a webpush token is the SHA-256 of its subscription's endpoint, and this one is not.")
        default:
            break
        }
        var copy = self
        var seen = Set<String>()
        copy.tags = tags.filter { seen.insert($0).inserted }
        return copy
    }
}
