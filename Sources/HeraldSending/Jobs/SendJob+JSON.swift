import Foundation
import HeraldCore
import HeraldStore

extension SendJob {
    /// The value of `kind` in a send's job.
    static let kind = "send"

    /// The stored form, version 2:
    ///
    /// ```json
    /// {"v": 2, "kind": "send", "app": "com.example.app", "pushType": "alert", "rate": 100,
    ///  "query": {"select": {"user": "alice"}, "topic": "com.example.app", "environment": "production",
    ///            "kinds": ["device"], "activityType": "…",
    ///            "preference": {"category": "marketing", "enabledByDefault": true},
    ///            "registeredThrough": 1796112000000000},
    ///  "sendAt": "2026-12-24T18:00:00Z" | "localTime": "2026-12-24T09:00:00", "timeZone": "Europe/Paris",
    ///  "notifications": {"": {"body": "<base64>", "pushType": "alert", "topic": "com.example.app", "priority": 10,
    ///                         "expiration": 0, "collapseId": "…"}, "fr": {…}},
    ///  "stampTimestamp": false, "targetDescription": "user alice", "summary": "alert push",
    ///  "frequencyCaps": ["marketing:3/1d", "*:10/1d"],
    ///  "quietHours": {"mode": "defer", "window": "22:00-08:00", "unsetZone": "UTC", "from": "2026-12-24T18:00:00Z"}}
    /// ```
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "v": .integer(StoredJob.currentVersion), "kind": .string(Self.kind), "app": .string(bundleID),
            "query": Self.json(query), "pushType": .string(pushType.rawValue),
            "notifications": .object(notifications.mapValues(Self.json)), "stampTimestamp": .bool(stampsTimestamp),
            "targetDescription": .string(targetDescription), "summary": .string(summary),
        ]
        if let rate { members["rate"] = .integer(rate) }
        if !frequencyCaps.isEmpty { members["frequencyCaps"] = .array(frequencyCaps.map { .string($0.description) }) }
        schedule?.write(to: &members)
        if let quietHours { members["quietHours"] = quietHours.json }
        return .object(members)
    }

    /// Reads a version-2 send job.
    init(_ job: JobReader) throws(SendJobError) {
        let pushTypeName = try job.string("pushType")
        guard let pushType = APNSPushType(rawValue: pushTypeName) else {
            throw job.failure("pushType", "is \"\(pushTypeName)\", not a push type")
        }
        let notificationsReader = try job.object("notifications")
        var notifications: [String: PreparedNotification] = [:]
        for language in notificationsReader.members.keys {
            notifications[language] = try Self.notification(notificationsReader.object(language))
        }
        guard notifications[""] != nil else {
            throw job.failure("notifications", "has no default notification (the key \"\")")
        }
        self.init(
            bundleID: try job.string("app"), query: try Self.query(job.object("query")), pushType: pushType,
            schedule: try SendSchedule.read(job), rate: try job.optionalInteger("rate", in: 1...Int.max),
            targetDescription: try job.string("targetDescription"), summary: try job.string("summary"),
            notifications: notifications, stampsTimestamp: try job.flag("stampTimestamp"),
            quietHours: job["quietHours"] == nil ? nil : try QuietHoursRule(job.object("quietHours")))
        if job["frequencyCaps"] != nil {
            for (index, text) in try job.strings("frequencyCaps").enumerated() {
                do {
                    frequencyCaps.append(try FrequencyCap(parsing: text))
                } catch {
                    throw job.failure("frequencyCaps[\(index)]", error.problem)
                }
            }
        }
    }

    private static func json(_ query: DeviceQuery) -> JSONValue {
        let select: [String: JSONValue] =
            switch query.selector {
            case .tokens(let tokens): ["tokens": .array(tokens.map { .string($0.hex) })]
            case .user(let user): ["user": .string(user)]
            case .tag(let tag): ["tag": .string(tag)]
            case .activity(let id): ["activity": .string(id)]
            case .topic: ["everyDevice": true]
            }
        var members: [String: JSONValue] = ["select": .object(select)]
        if let topic = query.topic { members["topic"] = .string(topic) }
        if let environment = query.environment { members["environment"] = .string(environment.name) }
        if let kinds = query.sortedKindNames { members["kinds"] = .array(kinds.map(JSONValue.string)) }
        if let activityType = query.activityType { members["activityType"] = .string(activityType) }
        if query.includesInvalidated { members["includesInvalidated"] = true }
        if let date = query.registeredThrough { members["registeredThrough"] = .integer(Int(StoreTime.microseconds(date))) }
        if let preference = query.preference {
            members["preference"] = .object([
                "category": .string(preference.category), "enabledByDefault": .bool(preference.enabledByDefault),
            ])
        }
        return .object(members)
    }

    private static func query(_ reader: JobReader) throws(SendJobError) -> DeviceQuery {
        let select = try reader.object("select")
        let forms = ["tokens", "user", "tag", "activity", "everyDevice"]
        let named = forms.filter { select[$0] != nil }
        guard named.count == 1, select.members.count == 1 else {
            throw reader.failure("select", "must have exactly one of \(forms.joined(separator: ", "))")
        }
        let topic = try reader.optionalString("topic")
        var query: DeviceQuery
        switch named[0] {
        case "tokens":
            var tokens: [DeviceToken] = []
            for (index, hex) in try select.strings("tokens").enumerated() {
                do {
                    tokens.append(try DeviceToken(hex: hex))
                } catch {
                    throw select.failure("tokens[\(index)]", "is not a device token")
                }
            }
            query = .tokens(tokens)
        case "user": query = .user(try select.string("user"))
        case "tag": query = .tag(try select.string("tag"))
        case "activity": query = .activity(try select.string("activity"))
        default:
            guard let topic else { throw reader.failure("topic", "is missing: every device of which app?") }
            query = .topic(topic)
        }
        if let topic { query = query.inTopic(topic) }
        query = query.environment(try reader.environment("environment"))
        if reader["kinds"] != nil {
            var kinds = Set<TokenKind>()
            for name in try reader.strings("kinds") {
                guard let kind = TokenKind(name: name) else { throw reader.failure("kinds", "has \"\(name)\", not a token kind") }
                kinds.insert(kind)
            }
            query = query.kinds(kinds)
        }
        var preference: PreferenceFilter?
        if reader["preference"] != nil {
            let rule = try reader.object("preference")
            preference = PreferenceFilter(
                category: try rule.string("category"), enabledByDefault: try rule.flag("enabledByDefault"))
        }
        // Microseconds since 1970; absent in the jobs of sends accepted before sends kept to their first audience.
        let registeredThrough = try reader.optionalInteger("registeredThrough", in: 0...Int.max)
        return query.activityType(try reader.optionalString("activityType"))
            .includingInvalidated(try reader.flag("includesInvalidated")).preference(preference)
            .registered(through: registeredThrough.map { StoreTime.date(Int64($0)) })
    }

    private static func json(_ notification: PreparedNotification) -> JSONValue {
        var members: [String: JSONValue] = [
            "body": .string(Data(notification.body).base64EncodedString()),
            "pushType": .string(notification.pushType.rawValue), "topic": .string(notification.topic),
        ]
        if let priority = notification.priority { members["priority"] = .integer(priority.rawValue) }
        if let expiration = notification.expiration { members["expiration"] = .integer(expiration.secondsSince1970) }
        if let collapseID = notification.collapseID { members["collapseId"] = .string(collapseID) }
        return .object(members)
    }

    private static func notification(_ reader: JobReader) throws(SendJobError) -> PreparedNotification {
        let pushTypeName = try reader.string("pushType")
        guard let pushType = APNSPushType(rawValue: pushTypeName) else {
            throw reader.failure("pushType", "is \"\(pushTypeName)\", not a push type")
        }
        return PreparedNotification(
            body: try reader.bytes("body"), pushType: pushType, topic: try reader.string("topic"),
            priority: try reader.priority("priority"), expiration: try reader.expiration("expiration"),
            collapseID: try reader.optionalString("collapseId"), apnsID: nil)
    }
}

extension SendSchedule {
    /// Adds the schedule to a stored job: `sendAt` (RFC 3339), or `localTime` and `timeZone` (the zone of devices
    /// without one). The names and forms are those of a send request, which version-1 jobs were.
    func write(to members: inout [String: JSONValue]) {
        switch self {
        case .at(let date):
            members["sendAt"] = .string(RFC3339.string(date))
        case .localTime(let local, let unsetZone):
            members["localTime"] = .string(local.description)
            members["timeZone"] = .string(unsetZone.identifier)
        }
    }

    /// Reads the schedule of a stored job; `nil` when it has none.
    static func read(_ job: JobReader) throws(SendJobError) -> SendSchedule? {
        let sendAt = try job.optionalDate("sendAt")
        let localTime = try job.optionalString("localTime")
        if let sendAt {
            guard localTime == nil else { throw job.failure("localTime", "is there beside sendAt") }
            return .at(sendAt)
        }
        guard let localTime else { return nil }
        guard let local = LocalDateTime(localTime) else {
            throw job.failure("localTime", "is not a date and wall-clock time such as 2026-12-24T09:00:00")
        }
        return .localTime(local, unsetZone: try job.timeZone("timeZone"))
    }
}

extension JobReader {
    /// A time zone a job names by its IANA id.
    func timeZone(_ name: String) throws(SendJobError) -> TimeZone {
        let zoneName = try string(name)
        guard let zone = TimeZone(identifier: zoneName) else {
            throw failure(name, "is \"\(zoneName)\", which this system's time-zone database does not know: update it")
        }
        return zone
    }
}

extension QuietHoursRule {
    /// The stored form: `{"mode": "defer", "window": "22:00-08:00", "unsetZone": "UTC", "from": "<RFC 3339>"}`.
    var json: JSONValue {
        .object([
            "mode": .string(mode.rawValue), "window": .string(window.description),
            "unsetZone": .string(unsetZone.identifier), "from": .string(RFC3339.string(from)),
        ])
    }

    init(_ reader: JobReader) throws(SendJobError) {
        let modeName = try reader.string("mode")
        guard let mode = QuietHoursMode(rawValue: modeName), mode != .ignore else {
            throw reader.failure("mode", "is \"\(modeName)\", not defer or drop")
        }
        let windowText = try reader.string("window")
        guard let window = QuietHours(windowText) else {
            throw reader.failure("window", "is \"\(windowText)\", not a window such as 22:00-08:00")
        }
        let zone = try reader.timeZone("unsetZone")
        guard let from = try reader.optionalDate("from") else { throw reader.failure("from", "is missing") }
        self.init(mode: mode, window: window, unsetZone: zone, from: from)
    }
}
