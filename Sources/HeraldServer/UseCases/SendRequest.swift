import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore

/// A send as a caller asks for it, typed: what `POST /api/send`'s body says, and what the Live Activity operations
/// build for their starts, updates and ends. ``SendPlan/init(_:apps:seenBy:sendID:at:resumed:)`` checks it against the
/// configuration of the moment and composes the send's job; ``Sends`` does that for a caller, with its access check.
///
/// Decoding (``init(json:)``) checks what the body alone can tell (types, sizes, token syntax, one target, a raw
/// payload or the typed fields); composition checks what needs the apps (the topic, the preference category, the
/// content key) and APNs's rules for the notification it would send.
struct SendRequest: Sendable, Hashable {
    /// The devices a send is for, within its app.
    enum Target: Sendable, Hashable {
        case token(DeviceToken)
        case tokens([DeviceToken])
        case user(String)
        case tag(String)
        /// The update tokens of one Live Activity (the app's own id).
        case activity(String)
        /// Every device of the request's ``topic``.
        case everyDevice

        /// Whether the target lists its registrations by token.
        var namesTokens: Bool {
            switch self {
            case .token, .tokens: true
            case .user, .tag, .activity, .everyDevice: false
            }
        }
    }

    /// What the notification says.
    enum Content: Sendable, Hashable {
        /// Built from the typed fields (`alert`, `badge`, `sound`, …, `data`).
        case typed(Payload)
        /// A whole JSON payload as given, sent byte for byte when nothing has to change it.
        case raw([String: JSONValue])
    }

    var target: Target
    /// The app's bundle id; `nil`: the only app of the server (or the caller's only app), else `400 missingTopic`.
    var topic: String?
    /// The one environment to reach; `nil`: both.
    var environment: APNSEnvironment?
    var content: Content
    /// Alerts per lowercase BCP 47 tag, each device getting its language's (docs/localization.md).
    var localizations: [String: Alert] = [:]
    /// Whether the content is encrypted with the app's content key.
    var encrypt = false
    /// `nil`: `background` for a payload that shows nothing, else `alert`.
    var pushType: APNSPushType?
    /// Narrows a `liveactivity` push to the push-to-start tokens of one activity type.
    var activityType: String?
    /// `nil`: APNs's default (10), or 5 for a background push.
    var priority: APNSPriority?
    var expiration: APNSExpiration?
    var collapseID: String?
    var schedule: SendSchedule?
    /// The most notifications per second; `nil`: as fast as APNs takes them.
    var rate: Int?
    /// `nil`: the app's default category, if it has one.
    var preferenceCategory: String?
    /// `false` waives the app's frequency caps: an admin's choice (``Sends``).
    var frequencyCap = true
    var quietHours: QuietHoursMode = .defer
    /// The kinds of registration the send reaches: APNs device tokens, web push subscriptions, or both.
    var transports: Set<Transport> = Set(Transport.allCases)

    /// How a registration is reached.
    enum Transport: String, Sendable, Hashable, CaseIterable {
        /// APNs: the app's device tokens (and Live Activity tokens).
        case apns
        /// Web Push: the app's browser subscriptions.
        case webPush = "webpush"
    }

    /// The highest `rate`.
    static let maximumRate = 1_000_000
    /// The most tokens a `tokens` target may list.
    static let maximumTokens = 100_000

    init(target: Target, topic: String? = nil, content: Content) {
        self.target = target
        self.topic = topic
        self.content = content
    }
}

// MARK: - The API's body

extension SendRequest {
    /// The fields of the typed notification, which exclude `payload`.
    private static let typedFields = [
        "alert", "badge", "sound", "threadId", "category", "contentAvailable", "mutableContent", "targetContentId",
        "interruptionLevel", "relevanceScore", "filterCriteria", "data",
    ]
    private static let targetForms = ["token", "tokens", "user", "tag", "activity", "topic"]

    /// Decodes `POST /api/send`'s body (docs/openapi.yaml, `SendRequest`).
    /// - Throws: ``APIError`` `400`: `invalidJSON`, `invalidField` naming the field, `missingTarget`, `badDeviceToken`,
    ///   `BadPriority`, `InvalidPushType`.
    init(json value: JSONValue) throws(APIError) {
        guard case .object(let members) = value else { throw APIError.invalidJSON("it is \(value.typeName)") }
        let fields = JSONFields(members)
        let (target, targetTopic) = try Self.target(fields["target"])
        self.init(
            target: target, topic: try Self.topic(fields, targetTopic: targetTopic), content: try Self.content(fields))
        schedule = try SendSchedule.parse(fields)
        rate = try fields.integer("rate", in: 1...Self.maximumRate)
        environment = try Self.environment(fields)
        preferenceCategory = try fields.string("preferenceCategory", bytes: 1...PreferenceCategory.maximumNameBytes)
        frequencyCap = try fields.bool("frequencyCap") ?? true
        if let name = try fields.string("quietHours") {
            guard let mode = QuietHoursMode(rawValue: name) else {
                throw APIError.invalidField(
                    "quietHours",
                    "use defer (sent at the end of the device's quiet hours), drop or ignore, or leave it out for defer")
            }
            quietHours = mode
        }
        localizations = try Self.localizations(fields)
        if fields["transports"] != nil {
            let names = try fields.strings("transports", maximumCount: Transport.allCases.count)
            transports = []
            for name in names {
                guard let transport = Transport(rawValue: name) else {
                    throw APIError.invalidField("transports", "list apns, webpush or both, not \(name.prefix(40))")
                }
                transports.insert(transport)
            }
            guard !transports.isEmpty else { throw APIError.invalidField("transports", "list apns, webpush or both") }
        }
        encrypt = try fields.bool("encrypt") ?? false
        pushType = try fields.string("pushType").map { name throws(APIError) in
            guard let type = APNSPushType(headerValue: name), type != .mdm else {
                throw APIError(
                    .badRequest, reason: APNSReason.invalidPushType.rawValue,
                    "\"pushType\": \(name) is not a push type: use alert, background, voip, liveactivity, …")
            }
            return type
        }
        activityType = try fields.string("activityType", bytes: 1...RegistrationRules.maximumActivityTypeBytes)
        if let activityType { try TextRules.checkIdentifier(activityType, field: "activityType") }
        priority = try fields.integer("priority").map(Self.priority)
        expiration = try fields.integer("expiration", in: 0...Int(Int32.max)).map(
            APNSExpiration.init(secondsSince1970:))
        collapseID = try fields.string("collapseId")
    }

    /// The app a request names: its `topic`, or its `{"topic": …}` target's; the same when both are there.
    /// - Throws: ``APIError`` `400 invalidField` naming `topic`.
    static func topic(_ fields: JSONFields, targetTopic: String?) throws(APIError) -> String? {
        let topic = try fields.string("topic", bytes: 1...RegistrationRules.maximumTopicBytes)
        if let targetTopic, let topic, targetTopic != topic {
            throw APIError.invalidField("topic", "it names \(topic) but the target is every device of \(targetTopic)")
        }
        return targetTopic ?? topic
    }

    /// A request's one `environment`; `nil`: both.
    /// - Throws: ``APIError`` `400 invalidField` naming `environment`.
    static func environment(_ fields: JSONFields) throws(APIError) -> APNSEnvironment? {
        guard let name = try fields.string("environment") else { return nil }
        guard let environment = APNSEnvironment(name: name) else {
            throw APIError.invalidField("environment", "use \"development\" or \"production\", or leave it out for both")
        }
        return environment
    }

    /// An APNs priority from its number.
    /// - Throws: ``APIError`` `400 BadPriority`.
    static func priority(_ number: Int) throws(APIError) -> APNSPriority {
        guard let priority = APNSPriority(rawValue: number) else {
            throw APIError(
                .badRequest, reason: APNSReason.badPriority.rawValue,
                "\"priority\": \(number) is not an APNs priority: use 10, 5 or 1.")
        }
        return priority
    }

    /// A send's `target` (also a Live Activity start's): the devices, and the app a `{"topic": …}` target names.
    /// - Throws: ``APIError`` `400 missingTarget`, `invalidField`, `badDeviceToken`.
    static func target(_ value: JSONValue?) throws(APIError) -> (Target, topic: String?) {
        guard let value else {
            throw APIError(
                .badRequest, reason: "missingTarget",
                "The send has no \"target\": give one of {\"token\": …}, {\"tokens\": […]}, {\"user\": …}, {\"tag\": …}, {\"activity\": …} or {\"topic\": …}."
            )
        }
        guard case .object(let target) = value else {
            throw APIError.invalidField("target", "it must be an object, not \(value.typeName)")
        }
        let fields = JSONFields(target)
        let named = targetForms.filter { fields[$0] != nil }
        guard named.count == 1 else {
            throw APIError.invalidField("target", "give exactly one of token, tokens, user, tag, activity or topic")
        }
        // A misspelt second member ("usr") would otherwise narrow nothing, silently.
        if let unknown = target.keys.sorted().first(where: { !targetForms.contains($0) }) {
            throw APIError.invalidField(
                "target",
                "\"\(unknown)\" is not a target: give exactly one of token, tokens, user, tag, activity or topic")
        }
        switch named[0] {
        case "token":
            return (.token(try RegistrationBody.parseToken(try fields.string("token") ?? "")), nil)
        case "tokens":
            let list = try fields.strings("tokens", maximumCount: maximumTokens)
            guard !list.isEmpty else { throw APIError.invalidField("target.tokens", "list at least one token") }
            var tokens: [DeviceToken] = []
            tokens.reserveCapacity(list.count)
            for (index, hex) in list.enumerated() {
                do {
                    tokens.append(try DeviceToken(hex: hex))
                } catch {
                    throw APIError(
                        .badRequest, reason: "badDeviceToken", "target.tokens[\(index)]: \(error.description)")
                }
            }
            return (.tokens(tokens), nil)
        case "user":
            return (.user(try fields.string("user", bytes: 1...RegistrationRules.maximumUserIDBytes)!), nil)
        case "tag":
            return (.tag(try fields.string("tag", bytes: 1...RegistrationRules.maximumTagBytes)!), nil)
        case "activity":
            let id = try fields.string("activity", bytes: 1...RegistrationRules.maximumActivityIDBytes)!
            try TextRules.checkIdentifier(id, field: "target.activity")
            return (.activity(id), nil)
        default:
            return (.everyDevice, try fields.string("topic", bytes: 1...RegistrationRules.maximumTopicBytes))
        }
    }

    /// A raw `payload`, or the typed fields; not both.
    private static func content(_ fields: JSONFields) throws(APIError) -> Content {
        let typedPresent = typedFields.filter { fields[$0] != nil }
        if let raw = try fields.object("payload") {
            guard typedPresent.isEmpty else {
                throw APIError.invalidField(
                    "payload",
                    "send either a raw payload or the typed fields (\(typedPresent.joined(separator: ", "))), not both")
            }
            return .raw(raw)
        }
        var aps = APS()
        if let value = fields["alert"] { aps.alert = try alert(value, field: "alert") }
        aps.badge = try fields.integer("badge", in: 0...Int(Int32.max))
        aps.sound = try fields.string("sound").map { .named($0) }
        aps.threadID = try fields.string("threadId")
        aps.category = try fields.string("category")
        aps.contentAvailable = try fields.bool("contentAvailable") ?? false
        aps.mutableContent = try fields.bool("mutableContent") ?? false
        aps.targetContentID = try fields.string("targetContentId")
        aps.interruptionLevel = try fields.string("interruptionLevel").map { name throws(APIError) in
            guard let level = InterruptionLevel(rawValue: name) else {
                throw APIError.invalidField("interruptionLevel", "use passive, active, time-sensitive or critical")
            }
            return level
        }
        if let value = fields["relevanceScore"] {
            guard let score = value.doubleValue else {
                throw APIError.invalidField("relevanceScore", "it must be a number from 0 to 1")
            }
            aps.relevanceScore = score
        }
        aps.filterCriteria = try fields.string("filterCriteria", bytes: 1...256)
        let custom = try fields.object("data") ?? [:]
        if custom["aps"] != nil {
            throw APIError.invalidField("data", "it holds the custom keys beside aps, so it cannot contain aps")
        }
        return .typed(Payload(aps: aps, custom: custom))
    }

    private static func alert(_ value: JSONValue, field: String) throws(APIError) -> Alert {
        switch value {
        case .string(let text):
            return .body(text)
        case .object(let members):
            let alertFields = JSONFields(members)
            let unknown = members.keys.filter { !["title", "subtitle", "body"].contains($0) }
            guard unknown.isEmpty else {
                throw APIError.invalidField(
                    field, "an alert has title, subtitle and body; for other keys send a raw payload")
            }
            return .content(
                AlertContent(
                    title: try alertFields.string("title"), subtitle: try alertFields.string("subtitle"),
                    body: try alertFields.string("body")))
        default:
            throw APIError.invalidField(
                field, "it must be a string or an object with title, subtitle and body, not \(value.typeName)")
        }
    }

    private static func localizations(_ fields: JSONFields) throws(APIError) -> [String: Alert] {
        guard let members = try fields.object("localizations") else { return [:] }
        var result: [String: Alert] = [:]
        for (language, value) in members {
            let tag = language.lowercased()
            guard RegistrationRules.isLanguageTag(tag) else {
                throw APIError.invalidField(
                    "localizations", "\"\(language)\" is not a BCP 47 language tag such as en or fr-CA")
            }
            result[tag] = try alert(value, field: "localizations.\(language)")
        }
        return result
    }
}
