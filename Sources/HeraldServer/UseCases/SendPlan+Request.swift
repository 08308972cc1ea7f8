import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore

/// A ``SendRequest`` composed into a ``HeraldSending/SendPlan``: checked against the configuration of the moment, every
/// notification variant validated and encoded, so a send that would be rejected for its content fails with `400`
/// before anything is sent. Jobs stored before version 2 (the request body) are composed again here with
/// `resumed: true` when a worker meets one.
extension SendPlan {
    /// Composes a send.
    /// - Throws: ``APIError`` `400`: `missingTopic`/`unknownTopic`, `invalidField` (naming the field), `noContentKey`,
    ///   or the APNs reason the notification would have caused (`PayloadTooLarge`, …).
    /// - Parameters:
    ///   - sendID: The send's id (a new one for a new send; the stored one when a worker reads a version-1 job).
    ///   - now: The time the notifications are prepared: a Live Activity payload without `aps.timestamp` gets it.
    ///   - resumed: Whether a worker reads a version-1 job (a stored request) again: its schedule is not checked
    ///     against `now` then.
    ///   - visible: The apps the caller is limited to, which alone an error names; `nil`: every app (a stored job).
    init(
        _ request: SendRequest, apps: AppDirectory, seenBy visible: Set<String>? = nil, sendID: SendID, at now: Date,
        resumed: Bool = false
    ) throws(APIError) {
        if !resumed { try request.schedule?.check(at: now) }
        let app = try apps.app(named: request.topic, seenBy: visible)
        var selection: DeviceQuery
        var single: DeviceToken?
        let targetDescription: String
        switch request.target {
        case .token(let token):
            single = token
            selection = .tokens([token])
            targetDescription = "token \(token.redacted)"
        case .tokens(let tokens):
            selection = .tokens(tokens)
            targetDescription = "\(tokens.count) tokens"
        case .user(let user):
            selection = .user(user)
            targetDescription = "user \(user)"
        case .tag(let tag):
            selection = .tag(tag)
            targetDescription = "tag \(tag)"
        case .activity(let id):
            selection = .activity(id)
            targetDescription = "activity \(id)"
        case .everyDevice:
            selection = .topic(app.bundleID)
            targetDescription = "every device"
        }
        selection = selection.inTopic(app.bundleID)
        if let environment = request.environment { selection = selection.environment(environment) }
        let category = try Self.preferenceCategory(request.preferenceCategory, app: app)
        selection = selection.preference(category?.filter)

        // Payload.
        var rawObject: [String: JSONValue]?
        var payload: Payload
        switch request.content {
        case .typed(let typed):
            payload = typed
        case .raw(let raw):
            rawObject = raw
            payload = try Self.payload(raw)
        }
        if payload.aps.alert == nil, !request.localizations.isEmpty {
            payload.aps.alert =
                request.localizations["en"] ?? request.localizations[request.localizations.keys.sorted()[0]]
        }
        let pushType = request.pushType ?? (payload.aps.isSilent ? .background : .alert)
        var stampsTimestamp = false
        if pushType == .liveactivity, case .object(var aps)? = rawObject?["aps"], aps["timestamp"] == nil {
            // A device shows the update with the latest timestamp and drops older ones: a scheduled update stamped
            // when it was asked for could lose to one sent meanwhile. The stamp is the time of sending: the job says
            // so, and a worker that runs it stamps it anew.
            stampsTimestamp = true
            aps["timestamp"] = .integer(Int(now.timeIntervalSince1970))
            rawObject?["aps"] = .object(aps)
            payload = try Self.payload(rawObject!)
        }
        if app.receipts, Self.receiptPushTypes.contains(pushType) {
            guard payload.custom[Self.receiptKey] == nil else {
                throw APIError.invalidField(
                    rawObject == nil ? "data.\(Self.receiptKey)" : "payload.\(Self.receiptKey)",
                    "Herald puts the send id there for delivery receipts: rename the key, or turn receipts off for \(app.bundleID) (\"receipts\": false)"
                )
            }
            let receipt = JSONValue.object(["send": .string(sendID.description)])
            payload.custom[Self.receiptKey] = receipt
            rawObject?[Self.receiptKey] = receipt
        }

        // Headers.
        var kinds = Set(TokenKind.all.filter { $0.pushTypes.contains(pushType) })
        if request.encrypt {
            // Herald's content encryption is opened by the app's service extension, which a browser has not; a web
            // message is end-to-end encrypted to its browser anyway (RFC 8291).
            kinds = kinds.filter { !$0.isWebPush }
        }
        kinds = kinds.filter { request.transports.contains($0.isWebPush ? .webPush : .apns) }
        var query = selection.kinds(kinds)
        if let activityType = request.activityType {
            guard pushType == .liveactivity else {
                throw APIError.invalidField(
                    "activityType", "it narrows a liveactivity push to the push-to-start tokens of one type")
            }
            query = query.kinds([.liveActivityStart]).activityType(activityType)
        }
        let priority = request.priority ?? (pushType == .background ? .considerPower : nil)

        // Variants: the default, and one per language; encrypted with the app's key when asked.
        var contentKey: ContentEncryptionKey?
        if request.encrypt {
            guard let key = app.contentKey else {
                throw APIError(
                    .badRequest, reason: "noContentKey",
                    "\"encrypt\": true needs a content key for \(app.bundleID): configure HERALD_CONTENT_KEY, or send without encryption."
                )
            }
            contentKey = key
        }
        let rawBytes: [UInt8]? =
            (rawObject != nil && request.localizations.isEmpty && !request.encrypt)
            ? JSONValue.object(rawObject!).jsonBytes : nil
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
                expiration: request.expiration, collapseID: request.collapseID)
            do {
                return try notification.prepare()
            } catch {
                throw Self.validationFailure(error)
            }
        }
        var prepared = ["": try prepare(payload)]
        var variants = ["": payload]
        for (language, alert) in request.localizations {
            var localized = payload
            localized.aps.alert = alert
            prepared[language] = try prepare(localized)
            variants[language] = localized
        }
        // A send to named tokens is checked at each subscription among them (its outcome says why one failed): an
        // APNs token's send should not be refused for what a browser cannot show.
        if let web = app.webPush, kinds.contains(where: \.isWebPush), !request.target.namesTokens {
            for (language, payload) in variants {
                try Self.checkWebMessage(
                    payload, language: language.isEmpty ? nil : language, request: request, web: web,
                    fieldPrefix: rawObject == nil ? "data." : "payload.", now: now)
            }
        }
        let variantCount = request.localizations.isEmpty ? "" : " in \(request.localizations.count + 1) variants"
        var job = SendJob(
            bundleID: app.bundleID, query: query, pushType: pushType, schedule: request.schedule, rate: request.rate,
            targetDescription: targetDescription,
            summary: "\(pushType) push" + variantCount + (request.encrypt ? ", encrypted" : ""),
            notifications: prepared, stampsTimestamp: stampsTimestamp,
            quietHours: Self.quietHoursRule(
                request.quietHours, app: app, category: category, pushType: pushType,
                interruptionLevel: payload.aps.interruptionLevel, schedule: request.schedule, now: now))
        if request.frequencyCap {
            job.frequencyCaps = FrequencyCap.applying(app.frequencyCaps, category: category, pushType: pushType)
        }
        self.init(validated: job, sendID: sendID, singleToken: single)
    }

    /// Checks that a variant makes a web message the app's subscriptions can be sent, as the sender will make it, so
    /// that a send a browser cannot show fails with `400` before anything is sent rather than at each subscription.
    /// - Throws: ``APIError`` `400`: `invalidField` naming `data.navigate`, `data.dir` or `data.actions`,
    ///   `webNotRenderable` or `webPayloadTooLarge`, each saying how to leave subscriptions out.
    private static func checkWebMessage(
        _ payload: Payload, language: String?, request: SendRequest, web: AppConfiguration.WebPush,
        fieldPrefix: String, now: Date
    ) throws(APIError) {
        do {
            _ = try WebPushSenders.message(
                for: payload, priority: request.priority, expiration: request.expiration,
                collapseID: request.collapseID, language: language, app: web, now: now)
        } catch {
            let variant = language.map { " (its \($0) variant)" } ?? ""
            let field: String? =
                switch error.code {
                case .invalidNavigate: WebPushMessage.navigateKey
                case .invalidDirection: WebPushMessage.directionKey
                case .invalidActions: WebPushMessage.actionsKey
                default: nil
                }
            if let field {
                throw APIError(
                    .badRequest, reason: "invalidField",
                    "The field \"\(fieldPrefix + field)\" is invalid for the app's web subscriptions\(variant): \(error.message)")
            }
            let explanation =
                "The notification cannot be sent to the app's web subscriptions\(variant): \(error.message) To reach only the app's devices, send with \"transports\": [\"apns\"]."
            guard error.code == .payloadTooLarge else {
                throw APIError(.badRequest, reason: "webNotRenderable", explanation)
            }
            throw APIError(.badRequest, reason: "webPayloadTooLarge", explanation)
        }
    }

    /// A raw payload, checked.
    private static func payload(_ raw: [String: JSONValue]) throws(APIError) -> Payload {
        do {
            return try Payload(json: .object(raw))
        } catch {
            throw validationFailure(error)
        }
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
    private static func preferenceCategory(_ asked: String?, app: AppDirectory.App) throws(APIError)
        -> PreferenceCategory?
    {
        guard let name = asked ?? app.defaultPreferenceCategory else { return nil }
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
}
