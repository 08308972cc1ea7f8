import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore

/// A send, parsed and validated: which devices, and the notification each one gets.
///
/// Made from the body of `POST /api/send` (``init(json:apps:sendID:at:resumed:)``), which checks it against the
/// configuration of the moment: every notification variant (one per language the send carries, plus the default) is
/// validated and encoded there, so a send that would be rejected for its content fails with `400` before anything is
/// sent. What that gives is ``job``, the ``HeraldSending/SendJob`` a queued send stores; a worker makes the plan again
/// from it (``init(job:sendID:at:)``) and sends exactly what was accepted, whatever the configuration says by then.
/// Jobs stored before that existed (version 1, the request body) are parsed again with `resumed: true`.
///
/// Alert and background notifications carry the send's id in a `herald` key beside `aps`
/// (`"herald": {"send": "<id>"}`, ``receiptKey``) unless the app turned receipts off: the device's SDK names the send
/// when it reports the notification received or opened (`POST /api/events`). The key is part of every variant before
/// validation, so it counts against APNs's payload limit.
struct SendPlan: Sendable {
    /// The send's id: what the `herald` key carries, and what each device's `apns-id` is derived from.
    let sendID: SendID
    /// What a queued send stores, and a worker runs: the devices, the schedule and every prepared notification.
    let job: SendJob
    /// The devices: the target, narrowed to the app, the environment asked for and the token kinds that take the
    /// push type; and for a wave of a `localTime` send, to its time zones.
    private(set) var query: DeviceQuery
    /// The single token of a `{"token": …}` target, which must be registered; `nil` for a plan made from a job.
    let singleToken: DeviceToken?

    /// The app the send is for.
    var bundleID: String { job.bundleID }
    /// When the send starts; `nil`: now.
    var schedule: SendSchedule? { job.schedule }
    /// The most notifications per second the whole send may start; `nil`: as fast as APNs takes them.
    var rate: Int? { job.rate }
    /// Whether the target is every device of the app (`{"topic": …}`).
    var targetsEveryDevice: Bool { job.targetsEveryDevice }
    /// The push type every targeted device gets.
    var pushType: APNSPushType { job.pushType }
    /// The target in words, safe to show.
    var targetDescription: String { job.targetDescription }
    /// The notification in words, safe to show: no alert text.
    var summary: String { job.summary }

    /// A stored send, as a worker runs it: nothing is checked or looked up again.
    /// - Parameters:
    ///   - now: The time of sending: a Live Activity payload that had no `aps.timestamp` gets it.
    init(job: SendJob, sendID: SendID, at now: Date) {
        self.sendID = sendID
        self.job = job.stamped(at: now)
        query = job.query
        singleToken = nil
    }

    /// The fields of the typed notification, which exclude `payload`.
    private static let typedFields = [
        "alert", "badge", "sound", "threadId", "category", "contentAvailable", "mutableContent", "targetContentId",
        "interruptionLevel", "relevanceScore", "data",
    ]
    /// The highest `rate`.
    static let maximumRate = 1_000_000
    /// The most tokens a `tokens` target may list.
    static let maximumTokens = 100_000
    /// The custom key beside `aps` that carries the send id, for delivery receipts.
    static let receiptKey = "herald"
    /// The push types whose payload the app's code sees (a service extension, the app delegate): only they carry
    /// the `herald` key.
    static let receiptPushTypes: Set<APNSPushType> = [.alert, .background]

    /// Parses and validates a send.
    /// - Throws: ``APIError`` `400`: `invalidJSON`, `invalidField` (naming the field), `missingTarget`,
    ///   `badDeviceToken`, `missingTopic`/`unknownTopic`, `noContentKey`, or the APNs reason the notification would
    ///   have caused (`BadPriority`, `PayloadTooLarge`, …).
    /// - Parameters:
    ///   - sendID: The send's id (a new one for a new send; the stored one when a worker reads a version-1 job).
    ///   - now: The time the notifications are prepared: a Live Activity payload without `aps.timestamp` gets it.
    ///   - resumed: Whether a worker reads a version-1 job (a stored request) again: its schedule is not checked
    ///     against `now` then.
    init(json value: JSONValue, apps: AppDirectory, sendID: SendID, at now: Date, resumed: Bool = false)
        throws(APIError)
    {
        self.sendID = sendID
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
        let targetTopic = try targetFields.string("topic", bytes: 1...TokenRegistration.maximumTopicBytes)
        let appTopic = try fields.string("topic", bytes: 1...TokenRegistration.maximumTopicBytes)
        if let targetTopic, let appTopic, targetTopic != appTopic {
            throw APIError.invalidField(
                "topic", "it names \(appTopic) but the target is every device of \(targetTopic)")
        }
        let app = try apps.app(named: targetTopic ?? appTopic)

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
            let user = try targetFields.string("user", bytes: 1...TokenRegistration.maximumUserIDBytes)!
            selection = .user(user)
            targetDescription = "user \(user)"
        case "tag":
            let tag = try targetFields.string("tag", bytes: 1...TokenRegistration.maximumTagBytes)!
            selection = .tag(tag)
            targetDescription = "tag \(tag)"
        case "activity":
            let id = try targetFields.string("activity", bytes: 1...TokenRegistration.maximumActivityIDBytes)!
            try TextRules.checkIdentifier(id, field: "target.activity")
            selection = .activity(id)
            targetDescription = "activity \(id)"
        default:
            selection = .topic(app.bundleID)
            targetDescription = "every device"
        }
        singleToken = single
        selection = selection.inTopic(app.bundleID)
        if let name = try fields.string("environment") {
            guard let environment = APNSEnvironment(name: name) else {
                throw APIError.invalidField(
                    "environment", "use \"development\" or \"production\", or leave it out for both")
            }
            selection = selection.environment(environment)
        }

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
        if let activityType = try fields.string("activityType", bytes: 1...TokenRegistration.maximumActivityTypeBytes) {
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
        self.query = query
        job = SendJob(
            bundleID: app.bundleID, query: query, pushType: pushType, schedule: schedule, rate: rate,
            targetDescription: targetDescription,
            summary: "\(pushType) push" + (localizations.isEmpty ? "" : " in \(localizations.count + 1) variants")
                + (encrypt ? ", encrypted" : ""),
            notifications: prepared, stampsTimestamp: stampsTimestamp)
    }

    /// The same send, narrowed to the devices of some time zones (a wave of a `localTime` send).
    func narrowed(to timeZones: DeviceQuery.TimeZoneFilter) -> SendPlan {
        var copy = self
        copy.query = query.timeZones(timeZones)
        return copy
    }

    /// The same send, narrowed to the devices up to a position of its target's order: one shard's run.
    func bounded(through bound: DeviceCursor?) -> SendPlan {
        var copy = self
        copy.query = query.through(bound)
        return copy
    }

    /// Whether the send waits in the queue for a worker whatever its size: scheduled or paced sends.
    var mustRunInBackground: Bool { schedule != nil || rate != nil }

    /// The scheduler lane of the send once queued: paced sends and sends to more than `campaignThreshold` devices are
    /// campaigns; other Live Activity pushes have their own lane; sends to every device of the app are campaigns too,
    /// and the rest are background sends.
    func lane(targetCount: Int, campaignThreshold: Int) -> SendLane {
        if rate != nil || targetCount > campaignThreshold { return .campaign }
        if pushType == .liveactivity { return .activity }
        return targetsEveryDevice ? .campaign : .background
    }

    /// The notification a device gets: the variant of its first preferred language that the send carries
    /// (`fr-CA` takes `fr-ca`, then `fr`), else the default.
    func notification(for device: DeviceRegistration) -> PreparedNotification {
        let variants = job.notifications
        if variants.count > 1 {
            for language in device.preferredLanguages {
                let tag = language.lowercased()
                if let exact = variants[tag] { return exact }
                if let dash = tag.firstIndex(of: "-"), let primary = variants[String(tag[..<dash])] { return primary }
            }
        }
        return variants[""]!
    }

    /// Every prepared notification by language key (`""` is the default): what a dry run shows.
    var preparedVariants: [String: PreparedNotification] { job.notifications }

    /// The language keys the send carries, for tests and summaries.
    var languages: [String] { job.notifications.keys.filter { !$0.isEmpty }.sorted() }

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
            guard (1...TokenRegistration.maximumLanguageCharacters).contains(tag.count),
                tag.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" })
            else {
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
