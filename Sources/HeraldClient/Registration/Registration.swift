public import Foundation
public import HeraldCore

/// One token's registration with the Herald server: the body of `POST /api/token`.
///
/// The wire format is specified in docs/api-registration.md. Register at every launch: the server treats a
/// registration as an idempotent upsert keyed by the token, and each POST describes the registration completely.
///
/// ```swift
/// let registration = try Registration(
///     deviceToken: tokenData, environment: .development, topic: "com.example.app",
///     userID: "42", preferredLanguages: Locale.preferredLanguages)
/// ```
public struct Registration: Sendable, Hashable, RegistrationRuleFields {
    /// The push address. Sent as lowercase hex under `token`.
    public var token: DeviceToken
    /// Which APNs the token belongs to. Sent twice, consistently: `environment` and the book's `debug` flag.
    public var environment: APNSEnvironment
    /// The app's bundle id, without any push-type suffix.
    public var topic: String?
    /// The app's own identifier of the signed-in user, so the server can reach every device of that user.
    public var userID: String?
    /// BCP 47 language tags, most preferred first (`Locale.preferredLanguages`), for server-side localization.
    public var preferredLanguages: [String]
    /// The app's version (`CFBundleShortVersionString`).
    public var appVersion: String?
    /// The platform the app runs on.
    public var platform: Platform?
    /// The per-installation id from ``InstallationID``: lets the server replace this installation's previous token.
    public var installationID: UUID?
    /// What the token addresses; `.device` for the token from `registerForRemoteNotifications()`.
    public var tokenKind: TokenKind
    /// Free-form labels the server can target (`"beta"`, `"sports"`).
    public var tags: [String]
    /// The device's IANA time zone id (`"Asia/Tokyo"`), so the server can deliver a send scheduled for a local
    /// wall-clock time at that time here. ``currentTimeZone`` by default; `nil` leaves it out.
    public var timeZone: String?
    /// For a `liveactivity-start` (push-to-start) token, which it requires: the name of the `ActivityAttributes` type
    /// the token starts, as the server will write it in `attributes-type` (`"DeliveryAttributes"`).
    public var activityType: String?
    /// For a `liveactivity` (update) token, which it requires: the app's own id of the activity, by which the server
    /// updates and ends it (an order number, a match id; not necessarily ActivityKit's `Activity.id`).
    public var activityID: String?
    /// Whether the person allows the app's Live Activities (ActivityKit's `areActivitiesEnabled`); `nil`: not said.
    /// The server sends no Live Activity push to a token registered with `false`.
    public var activitiesEnabled: Bool? = nil
    /// Whether the person allows frequent Live Activity updates (ActivityKit's `frequentPushesEnabled`); `nil`: not
    /// said. The server sends priority-10 updates to a token registered with `false` at priority 5.
    public var frequentPushesEnabled: Bool? = nil

    /// Describes a token's registration.
    public init(
        token: DeviceToken, environment: APNSEnvironment, topic: String? = nil, userID: String? = nil,
        preferredLanguages: [String] = [], appVersion: String? = nil, platform: Platform? = Platform.current,
        installationID: UUID? = nil, tokenKind: TokenKind = .device, tags: [String] = [],
        timeZone: String? = Registration.currentTimeZone, activityType: String? = nil, activityID: String? = nil
    ) {
        self.token = token
        self.environment = environment
        self.topic = topic
        self.userID = userID
        self.preferredLanguages = preferredLanguages
        self.appVersion = appVersion
        self.platform = platform
        self.installationID = installationID
        self.tokenKind = tokenKind
        self.tags = tags
        self.timeZone = timeZone
        self.activityType = activityType
        self.activityID = activityID
    }

    /// Describes the registration of the raw token bytes that
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` delivers.
    /// - Throws: ``DeviceTokenError`` when the data is empty or outside the token length bounds.
    public init(
        deviceToken: Data, environment: APNSEnvironment, topic: String? = nil, userID: String? = nil,
        preferredLanguages: [String] = [], appVersion: String? = nil, platform: Platform? = Platform.current,
        installationID: UUID? = nil, tokenKind: TokenKind = .device, tags: [String] = [],
        timeZone: String? = Registration.currentTimeZone, activityType: String? = nil, activityID: String? = nil
    ) throws(DeviceTokenError) {
        self.init(
            token: try DeviceToken(data: deviceToken), environment: environment, topic: topic, userID: userID,
            preferredLanguages: preferredLanguages, appVersion: appVersion, platform: platform,
            installationID: installationID, tokenKind: tokenKind, tags: tags, timeZone: timeZone,
            activityType: activityType, activityID: activityID)
    }

    /// The device's time zone id (`TimeZone.current.identifier`) when it has the shape of an IANA id, otherwise `nil`.
    ///
    /// A registration must never fail because of a default, so an identifier ``validate()`` would refuse (an odd
    /// `TZ` setting on Linux) is left out rather than sent.
    public static var currentTimeZone: String? {
        let identifier = TimeZone.current.identifier
        return isTimeZoneIdentifier(identifier) ? identifier : nil
    }
}

// MARK: - Wire format

extension Registration {
    /// The JSON field names of the registration body.
    public enum Field {
        /// The hex token.
        public static let token = "token"
        /// The book's Boolean: `true` for development.
        public static let debug = "debug"
        /// `development` or `production`.
        public static let environment = "environment"
        /// The bundle id.
        public static let topic = "topic"
        /// The app's user id.
        public static let userID = "userId"
        /// BCP 47 tags, most preferred first.
        public static let preferredLanguages = "preferredLanguages"
        /// The app's version.
        public static let appVersion = "appVersion"
        /// `iOS`, `macOS`, `tvOS`, `watchOS` or `visionOS`.
        public static let platform = "platform"
        /// The per-installation UUID.
        public static let installationID = "installationId"
        /// What the token addresses.
        public static let tokenKind = "tokenKind"
        /// Labels the server can target.
        public static let tags = "tags"
        /// The device's IANA time zone id.
        public static let timeZone = "timeZone"
        /// The `ActivityAttributes` type a push-to-start token starts.
        public static let activityType = "activityType"
        /// The app's id of the activity an update token belongs to.
        public static let activityID = "activityId"
        /// Whether the person allows the app's Live Activities.
        public static let activitiesEnabled = "activitiesEnabled"
        /// Whether the person allows frequent Live Activity updates.
        public static let frequentPushesEnabled = "frequentPushesEnabled"
    }

    /// The request body as a JSON value. Absent optional fields and empty lists are left out.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            Field.token: .string(token.hex),
            Field.debug: .bool(environment.isDevelopment),
            Field.environment: .string(environment.name),
            Field.tokenKind: .string(tokenKind.name),
        ]
        if let topic { members[Field.topic] = .string(topic) }
        if let userID { members[Field.userID] = .string(userID) }
        if !preferredLanguages.isEmpty {
            members[Field.preferredLanguages] = .array(preferredLanguages.map { .string($0) })
        }
        if let appVersion { members[Field.appVersion] = .string(appVersion) }
        if let platform { members[Field.platform] = .string(platform.name) }
        if let installationID { members[Field.installationID] = .string(installationID.uuidString.lowercased()) }
        if !tags.isEmpty { members[Field.tags] = .array(tags.map { .string($0) }) }
        if let timeZone { members[Field.timeZone] = .string(timeZone) }
        if let activityType { members[Field.activityType] = .string(activityType) }
        if let activityID { members[Field.activityID] = .string(activityID) }
        if let activitiesEnabled { members[Field.activitiesEnabled] = .bool(activitiesEnabled) }
        if let frequentPushesEnabled { members[Field.frequentPushesEnabled] = .bool(frequentPushesEnabled) }
        return .object(members)
    }

    /// The compact JSON request body, members in name order: the same registration is the same bytes in every
    /// process, so bodies can be compared in logs and captures.
    public var jsonBytes: [UInt8] { json.sortedJSONBytes }

    /// Reads a registration back from its JSON form: a saved pending registration, or the server's echo.
    ///
    /// Lenient on purpose: unknown fields (a server-side `id`, timestamps) are ignored, and `environment` wins
    /// over `debug` when both are present. Returns `nil` when the token or the environment is missing or invalid,
    /// or a known field has the wrong type.
    public init?(json: JSONValue) {
        guard case .object(let members) = json,
            let hex = members[Field.token]?.stringValue, let token = try? DeviceToken(hex: hex)
        else { return nil }
        let environment: APNSEnvironment
        if let name = members[Field.environment]?.stringValue {
            guard let named = APNSEnvironment(name: name) else { return nil }
            environment = named
        } else if let debug = members[Field.debug]?.boolValue {
            environment = debug ? .development : .production
        } else {
            return nil
        }
        // `.some(nil)`: absent or null; `.some(text)`: a string; `nil`: another type, which refuses the whole body.
        func string(_ key: String) -> String?? {
            guard let value = members[key], value != .null else { return .some(nil) }
            return value.stringValue.map { .some($0) }
        }
        // `.some(nil)`: absent or null; `.some(flag)`: a Boolean; `nil`: another type.
        func flag(_ key: String) -> Bool?? {
            guard let value = members[key], value != .null else { return .some(nil) }
            return value.boolValue.map { .some($0) }
        }
        // `[]` when absent or null; `nil` when not an array of strings.
        func strings(_ key: String) -> [String]? {
            guard let value = members[key], value != .null else { return [] }
            guard let elements = value.arrayValue else { return nil }
            let texts = elements.compactMap(\.stringValue)
            return texts.count == elements.count ? texts : nil
        }
        guard let topic = string(Field.topic), let userID = string(Field.userID),
            let appVersion = string(Field.appVersion), let platformName = string(Field.platform),
            let installation = string(Field.installationID), let kindName = string(Field.tokenKind),
            let languages = strings(Field.preferredLanguages), let tags = strings(Field.tags),
            let timeZone = string(Field.timeZone), let activityType = string(Field.activityType),
            let activityID = string(Field.activityID),
            let activitiesEnabled = flag(Field.activitiesEnabled), let frequentPushesEnabled = flag(Field.frequentPushesEnabled)
        else { return nil }
        var platform: Platform?
        if let platformName {
            guard let parsed = Platform(name: platformName) else { return nil }
            platform = parsed
        }
        var installationID: UUID?
        if let installation {
            guard let parsed = UUID(uuidString: installation) else { return nil }
            installationID = parsed
        }
        var tokenKind = TokenKind.device
        if let kindName {
            guard let parsed = TokenKind(name: kindName) else { return nil }
            tokenKind = parsed
        }
        self.init(
            token: token, environment: environment, topic: topic, userID: userID, preferredLanguages: languages,
            appVersion: appVersion, platform: platform, installationID: installationID, tokenKind: tokenKind,
            tags: tags, timeZone: timeZone, activityType: activityType, activityID: activityID)
        self.activitiesEnabled = activitiesEnabled
        self.frequentPushesEnabled = frequentPushesEnabled
    }
}

// MARK: - Rules

extension Registration {
    /// Whether a text has the shape of an IANA time zone id (``HeraldCore/RegistrationRules/hasTimeZoneShape(_:)``).
    /// Whether the zone exists is the server's time-zone database's call.
    static func isTimeZoneIdentifier(_ text: String) -> Bool {
        RegistrationRules.hasTimeZoneShape(text)
    }

    /// Checks the registration against the server's rules (``HeraldCore/RegistrationRules``), so that a request the
    /// server would refuse is never sent, nor queued to be retried forever.
    /// - Throws: ``RegistrationError`` (`invalidRegistration`) naming the field at fault.
    public func validate() throws(RegistrationError) {
        do {
            try checkRegistrationRules()
        } catch {
            throw RegistrationError.invalidRegistration(field: error.field, error.description)
        }
    }
}
