import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore

/// `POST /api/send`'s body read into a ``HeraldSending/SendPlan``: parsed and checked against the configuration of the
/// moment, every notification variant validated and encoded, so a send that would be rejected for its content fails
/// with `400` before anything is sent. Jobs stored before version 2 (the request body) are parsed again here with
/// `resumed: true` when a worker meets one.
extension SendPlan {
    /// The fields of the typed notification, which exclude `payload`.
    private static let typedFields = [
        "alert", "badge", "sound", "threadId", "category", "contentAvailable", "mutableContent", "targetContentId",
        "interruptionLevel", "relevanceScore", "data",
    ]
    /// The highest `rate`.
    static let maximumRate = 1_000_000
    /// The most tokens a `tokens` target may list.
    static let maximumTokens = 100_000

    /// Parses and validates a send.
    /// - Throws: ``APIError`` `400`: `invalidJSON`, `invalidField` (naming the field), `missingTarget`,
    ///   `badDeviceToken`, `missingTopic`/`unknownTopic`, `noContentKey`, or the APNs reason the notification would
    ///   have caused (`BadPriority`, `PayloadTooLarge`, …).
    /// - Parameters:
    ///   - sendID: The send's id (a new one for a new send; the stored one when a worker reads a version-1 job).
    ///   - now: The time the notifications are prepared: a Live Activity payload without `aps.timestamp` gets it.
    ///   - resumed: Whether a worker reads a version-1 job (a stored request) again: its schedule is not checked
    ///     against `now` then.
    ///   - visible: The apps the caller is limited to, which alone an error names; `nil`: every app (a stored job).
    init(
        json value: JSONValue, apps: AppDirectory, seenBy visible: Set<String>? = nil, sendID: SendID, at now: Date,
        resumed: Bool = false
    ) throws(APIError) {
        guard case .object(let members) = value else { throw APIError.invalidJSON("it is \(value.typeName)") }
        let fields = JSONFields(members)
        let schedule = try SendSchedule.parse(fields, now: resumed ? nil : now)
        let rate = try fields.integer("rate", in: 1...Self.maximumRate)

        // Target.
        guard let target = try fields.object("target") else {
            throw APIError(
                .badRequest, reason: "missingTarget",
                "The send has no \"target\": give one of {\"token\": …}, {\"tokens\": […]}, {\"user\": …}, {\"tag\": …}, {\"activity\": …} or {\"topic\": …}."
            )
        }
        let targetFields = JSONFields(target)
        let forms = ["token", "tokens", "user", "tag", "activity", "topic"]
        let named = forms.filter { targetFields[$0] != nil }
        guard named.count == 1 else {
            throw APIError.invalidField("target", "give exactly one of token, tokens, user, tag, activity or topic")
        }
        // A misspelt second member ("usr") would otherwise narrow nothing, silently.
        if let unknown = target.keys.sorted().first(where: { !forms.contains($0) }) {
            throw APIError.invalidField(
                "target",
                "\"\(unknown)\" is not a target: give exactly one of token, tokens, user, tag, activity or topic")
        }
        let targetTopic = try targetFields.string("topic", bytes: 1...RegistrationRules.maximumTopicBytes)
        let appTopic = try fields.string("topic", bytes: 1...RegistrationRules.maximumTopicBytes)
        if let targetTopic, let appTopic, targetTopic != appTopic {
            throw APIError.invalidField(
                "topic", "it names \(appTopic) but the target is every device of \(targetTopic)")
        }
        let app = try apps.app(named: targetTopic ?? appTopic, seenBy: visible)

        var selection: DeviceQuery
        var single: DeviceToken?
        let targetDescription: String
        switch named[0] {
        case "token":
            let hex = try targetFields.string("token") ?? ""
            single = try RegistrationBody.parseToken(hex)
            selection = .tokens([single!])
            targetDescription = "token \(single!.redacted)"
        case "tokens":
            let list = try targetFields.strings("tokens", maximumCount: Self.maximumTokens)
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
            selection = .tokens(tokens)
            targetDescription = "\(tokens.count) tokens"
        case "user":
            let user = try targetFields.string("user", bytes: 1...RegistrationRules.maximumUserIDBytes)!
            selection = .user(user)
            targetDescription = "user \(user)"
        case "tag":
            let tag = try targetFields.string("tag", bytes: 1...RegistrationRules.maximumTagBytes)!
            selection = .tag(tag)
            targetDescription = "tag \(tag)"
        case "activity":
            let id = try targetFields.string("activity", bytes: 1...RegistrationRules.maximumActivityIDBytes)!
            try TextRules.checkIdentifier(id, field: "target.activity")
            selection = .activity(id)
            targetDescription = "activity \(id)"
        default:
            selection = .topic(app.bundleID)
            targetDescription = "every device"
        }
        selection = selection.inTopic(app.bundleID)
        if let name = try fields.string("environment") {
            guard let environment = APNSEnvironment(name: name) else {
                throw APIError.invalidField(
                    "environment", "use \"development\" or \"production\", or leave it out for both")
            }
            selection = selection.environment(environment)
        }
        let category = try Self.preferenceCategory(fields, app: app)
        selection = selection.preference(category?.filter)
        // Admin keys only (SendController checks): an opt-out that any sender could write would make caps advisory.
        let capped = try fields.bool("frequencyCap") ?? true
        let quietHoursMode = try Self.quietHoursMode(fields)

        // Payload.
        let raw = try fields.object("payload")
        let typedPresent = Self.typedFields.filter { fields[$0] != nil }
        if raw != nil, !typedPresent.isEmpty {
            throw APIError.invalidField(
                "payload",
                "send either a raw payload or the typed fields (\(typedPresent.joined(separator: ", "))), not both")
        }
        let localizations = try Self.localizations(fields)
        let encrypt = try fields.bool("encrypt") ?? false
        var payload: Payload
        if let raw {
            do {
                payload = try Payload(json: .object(raw))
            } catch {
                throw Self.validationFailure(error)
            }
        } else {
            payload = try Self.typedPayload(fields)
        }
        if payload.aps.alert == nil, !localizations.isEmpty {
            payload.aps.alert = localizations["en"] ?? localizations[localizations.keys.sorted()[0]]
        }
        let explicitType = try fields.string("pushType").map { name throws(APIError) in
            guard let type = APNSPushType(headerValue: name), type != .mdm else {
                throw APIError(
                    .badRequest, reason: APNSReason.invalidPushType.rawValue,
                    "\"pushType\": \(name) is not a push type: use alert, background, voip, liveactivity, …")
            }
            return type
        }
        let pushType = explicitType ?? (payload.aps.isSilent ? .background : .alert)
        var rawObject = raw
        var stampsTimestamp = false
        if pushType == .liveactivity, case .object(var aps)? = rawObject?["aps"], aps["timestamp"] == nil {
            // A device shows the update with the latest timestamp and drops older ones: a scheduled update stamped
            // when it was asked for could lose to one sent meanwhile. The stamp is the time of sending: the job says
            // so, and a worker that runs it stamps it anew.
            stampsTimestamp = true
            aps["timestamp"] = .integer(Int(now.timeIntervalSince1970))
            rawObject?["aps"] = .object(aps)
            do {
                payload = try Payload(json: .object(rawObject!))
            } catch {
                throw Self.validationFailure(error)
            }
        }
        if app.receipts, Self.receiptPushTypes.contains(pushType) {
            guard payload.custom[Self.receiptKey] == nil else {
                throw APIError.invalidField(
                    raw == nil ? "data.\(Self.receiptKey)" : "payload.\(Self.receiptKey)",
                    "Herald puts the send id there for delivery receipts: rename the key, or turn receipts off for \(app.bundleID) (\"receipts\": false)"
                )
            }
            let receipt = JSONValue.object(["send": .string(sendID.description)])
            payload.custom[Self.receiptKey] = receipt
            rawObject?[Self.receiptKey] = receipt
        }

        // Headers.
        var query = selection.kinds(Set(TokenKind.all.filter { $0.pushTypes.contains(pushType) }))
        if let activityType = try fields.string("activityType", bytes: 1...RegistrationRules.maximumActivityTypeBytes) {
            guard pushType == .liveactivity else {
                throw APIError.invalidField(
                    "activityType", "it narrows a liveactivity push to the push-to-start tokens of one type")
            }
            try TextRules.checkIdentifier(activityType, field: "activityType")
            query = query.kinds([.liveActivityStart]).activityType(activityType)
        }
        var priority = try fields.integer("priority").map { number throws(APIError) in
            guard let priority = APNSPriority(rawValue: number) else {
                throw APIError(
                    .badRequest, reason: APNSReason.badPriority.rawValue,
                    "\"priority\": \(number) is not an APNs priority: use 10, 5 or 1.")
            }
            return priority
        }
        if priority == nil, pushType == .background { priority = .considerPower }
        let expiration = try fields.integer("expiration", in: 0...Int(Int32.max)).map(
            APNSExpiration.init(secondsSince1970:))
        let collapseID = try fields.string("collapseId")

        // Variants: the default, and one per language; encrypted with the app's key when asked.
        var contentKey: ContentEncryptionKey?
        if encrypt {
            guard let key = app.contentKey else {
                throw APIError(
                    .badRequest, reason: "noContentKey",
                    "\"encrypt\": true needs a content key for \(app.bundleID): configure HERALD_CONTENT_KEY, or send without encryption."
                )
            }
            contentKey = key
        }
        let rawBytes: [UInt8]? =
            (rawObject != nil && localizations.isEmpty && !encrypt) ? JSONValue.object(rawObject!).jsonBytes : nil
        func prepare(_ payload: Payload) throws(APIError) -> PreparedNotification {
            var payload = payload
            if let contentKey {
                do {
                    payload = try payload.encryptingContent(with: contentKey)
                } catch {
                    throw APIError(
                        .badRequest, reason: "nothingToEncrypt", "\"encrypt\": true, but \(error.description)")
                }
            }
            let body: PushNotification.Body = rawBytes.map { .raw($0) } ?? .payload(payload)
            let notification = PushNotification(
                body: body, pushType: pushType, topic: pushType.topic(forBundleID: app.bundleID), priority: priority,
                expiration: expiration, collapseID: collapseID)
            do {
                return try notification.prepare()
            } catch {
                throw Self.validationFailure(error)
            }
        }
        var prepared = ["": try prepare(payload)]
        for (language, alert) in localizations {
            var localized = payload
            localized.aps.alert = alert
            prepared[language] = try prepare(localized)
        }
        var job = SendJob(
            bundleID: app.bundleID, query: query, pushType: pushType, schedule: schedule, rate: rate,
            targetDescription: targetDescription,
            summary: "\(pushType) push" + (localizations.isEmpty ? "" : " in \(localizations.count + 1) variants")
                + (encrypt ? ", encrypted" : ""),
            notifications: prepared, stampsTimestamp: stampsTimestamp,
            quietHours: Self.quietHoursRule(
                quietHoursMode, app: app, category: category, pushType: pushType,
                interruptionLevel: payload.aps.interruptionLevel, schedule: schedule, now: now))
        if capped {
            job.frequencyCaps = FrequencyCap.applying(app.frequencyCaps, category: category, pushType: pushType)
        }
        self.init(validated: job, sendID: sendID, singleToken: single)
    }

    /// The send's `quietHours`: `defer` (the default), `drop` or `ignore`.
    private static func quietHoursMode(_ fields: JSONFields) throws(APIError) -> QuietHoursMode {
        guard let name = try fields.string("quietHours") else { return .defer }
        guard let mode = QuietHoursMode(rawValue: name) else {
            throw APIError.invalidField(
                "quietHours",
                "use defer (sent at the end of the device's quiet hours), drop or ignore, or leave it out for defer")
        }
        return mode
    }

    /// The quiet-hours rule a send's job stores; `nil` when quiet hours do not apply to it: the app has no window,
    /// the send ignores them, or it is exempt (a mandatory category, a `time-sensitive` or `critical` alert, any push
    /// that is not an alert: background, Live Activity, VoIP, …).
    private static func quietHoursRule(
        _ mode: QuietHoursMode, app: AppDirectory.App, category: PreferenceCategory?, pushType: APNSPushType,
        interruptionLevel: InterruptionLevel?, schedule: SendSchedule?, now: Date
    ) -> QuietHoursRule? {
        guard let window = app.quietHours, mode != .ignore, category?.mode != .mandatory, pushType == .alert,
            interruptionLevel != .timeSensitive, interruptionLevel != .critical
        else { return nil }
        var from = now
        if case .at(let date) = schedule { from = date }
        // Whole seconds, as the job stores it: the send finds the same devices quiet however often it is read.
        from = Date(timeIntervalSince1970: from.timeIntervalSince1970.rounded(.down))
        return QuietHoursRule(mode: mode, window: window, unsetZone: app.quietHoursTimeZone, from: from)
    }

    /// The send's `preferenceCategory`, else the app's default one; `nil` when the send is not subject to preferences.
    private static func preferenceCategory(_ fields: JSONFields, app: AppDirectory.App) throws(APIError)
        -> PreferenceCategory?
    {
        guard
            let name = try fields.string("preferenceCategory", bytes: 1...PreferenceCategory.maximumNameBytes)
                ?? app.defaultPreferenceCategory
        else { return nil }
        guard let category = app.preferenceCategories.named(name) else {
            let declared = app.preferenceCategories.map(\.name)
            throw APIError.invalidField(
                "preferenceCategory",
                declared.isEmpty
                    ? "\(app.bundleID) declares no preference categories: declare them (HERALD_PREFERENCE_CATEGORIES), or leave the field out"
                    : "\(app.bundleID) has no category \(name): use one of \(declared.joined(separator: ", "))")
        }
        return category
    }

    private static func validationFailure(_ error: NotificationValidationError) -> APIError {
        APIError(.badRequest, reason: error.reason?.rawValue ?? error.code.description, error.description)
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

    private static func typedPayload(_ fields: JSONFields) throws(APIError) -> Payload {
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
        let custom = try fields.object("data") ?? [:]
        if custom["aps"] != nil {
            throw APIError.invalidField("data", "it holds the custom keys beside aps, so it cannot contain aps")
        }
        return Payload(aps: aps, custom: custom)
    }
}
