import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// Live Activities by the app's own activity id (API key with the `send` scope): `POST /api/activities` starts one on
/// a target's devices through their push-to-start tokens, `PATCH /api/activities/{id}` updates it on every device
/// that registered its update token, `DELETE /api/activities/{id}` ends it, `GET /api/activities/{id}` shows it, and
/// `GET /api/activities` lists an app's activities newest first.
///
/// Each push is a send of push type `liveactivity` through the send path (validated, recorded, inline or queued, with
/// its outcomes and receipts): the answer is the send, plus the activity. Updates default to priority 5, which
/// ActivityKit does not budget; an update with an alert, a start and an end default to 10 (docs/live-activities.md).
struct ActivityController: Sendable {
    let store: any Store
    let keys: APIKeyVerifier
    let apps: AppDirectory
    let engine: SendEngine
    let limits: ServerConfiguration.Limits
    let clock: any WallClock
    let metrics: ServerMetrics

    func addRoutes(to router: Router<ServerRequestContext>) {
        let group = router.group().add(middleware: APIKeyAuthenticator(keys: keys, scope: .send))
        group.post("/api/activities", use: start)
        group.get("/api/activities", use: list)
        group.get("/api/activities/{id}", use: show)
        group.patch("/api/activities/{id}", use: update)
        group.delete("/api/activities/{id}", use: end)
    }

    /// The keys of an activity request besides the push's own.
    private static let startFields: Set<String> = Set<String>([
        "activityId", "activityType", "target", "topic", "environment", "attributes", "contentState", "alert", "sound",
        "staleDate", "relevanceScore", "priority", "inputPushToken", "inputPushChannel",
    ]).union(scheduleFields)
    private static let updateFields: Set<String> = Set<String>([
        "topic", "contentState", "alert", "sound", "staleDate", "relevanceScore", "priority",
    ]).union(scheduleFields)
    /// A start or an update can wait for its time and be paced like any send; an end cannot, since it ends the
    /// activity for the API at once.
    private static let scheduleFields: Set<String> = ["sendAt", "localTime", "timeZone", "rate"]
    private static let endFields: Set<String> = [
        "topic", "contentState", "alert", "sound", "staleDate", "relevanceScore", "priority", "dismissalDate",
    ]

    @Sendable func start(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await Self.body(request, limit: limits.sendBodyBytes, allowed: Self.startFields)
        guard let id = try fields.string("activityId", bytes: 1...TokenRegistration.maximumActivityIDBytes) else {
            throw APIError.invalidField("activityId", "give the app's own id of the activity, such as an order number")
        }
        try TextRules.checkIdentifier(id, field: "activityId")
        guard let type = try fields.string("activityType", bytes: 1...TokenRegistration.maximumActivityTypeBytes)
        else {
            throw APIError.invalidField("activityType", "give the app's ActivityAttributes type, such as DeliveryAttributes")
        }
        guard let target = fields["target"] else {
            throw APIError(
                .badRequest, reason: "missingTarget",
                "The activity has no \"target\": give the user, tag, token(s) or topic whose devices start it.")
        }
        guard let attributes = try fields.object("attributes") else {
            throw APIError.invalidField("attributes", "give the activity's static attributes as an object")
        }
        let inputPushToken = try fields.bool("inputPushToken") ?? true
        let channel = try fields.string("inputPushChannel", bytes: 1...64)
        var aps = try Self.content(fields, event: "start", requiringState: true)
        aps["attributes-type"] = .string(type)
        aps["attributes"] = .object(attributes)
        if let channel {
            aps["input-push-channel"] = .string(channel)
        } else if inputPushToken {
            aps["input-push-token"] = 1
        }
        var send = Self.send(aps: aps, fields: fields, priority: 10)
        send["target"] = target
        send["activityType"] = .string(type)
        if let environment = fields["environment"] { send["environment"] = environment }
        let plan = try SendPlan(json: .object(send), apps: apps, sendID: SendID(at: clock.now()), at: clock.now())
        guard let activity = try await store.createActivity(NewActivity(topic: plan.bundleID, id: id, activityType: type))
        else {
            throw APIError(
                .conflict, reason: "activityExists",
                "The app \(plan.bundleID) has an activity \(id) already: give each activity its own id.")
        }
        metrics.activityPush(event: "start", priority: Self.priority(of: plan), via: .devices)
        context.logger.info("Starting a Live Activity", metadata: ["herald.activity": "\(id)"])
        return try await answer(perform(plan, context: context), activity)
    }

    @Sendable func update(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await Self.body(request, limit: limits.sendBodyBytes, allowed: Self.updateFields)
        let alert = fields["alert"] != nil
        let pushed = try await push(
            try Self.pathActivityID(context), fields: fields, event: "update",
            priority: alert ? 10 : 5, context: context)
        return answer(pushed)
    }

    @Sendable func end(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await Self.body(
            request, limit: limits.sendBodyBytes, allowed: Self.endFields, emptyAllowed: true)
        let id = try Self.pathActivityID(context)
        return answer(try await endActivity(id, fields: fields, context: context))
    }

    /// Ends a running activity on its update tokens, with the end's optional fields (``endFields``; `topic` picks
    /// the app): what `DELETE /api/activities/{id}` does, and the console's *End*.
    func endActivity(_ id: String, fields: JSONFields, context: ServerRequestContext) async throws -> Pushed {
        try await push(id, fields: fields, event: "end", priority: 10, context: context)
    }

    /// An app's activities, newest first, one page at a time (`?topic=&status=active|ended&after=<cursor>&limit=`,
    /// default 100). Each is shown as by `GET /api/activities/{id}` but without `devices`: a count per listed
    /// activity would make a page cost as many counts as rows.
    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let topic = try apps.app(named: try request.queryParameter("topic")).bundleID
        let active = try Self.status(request.queryParameter("status"))
        let cursor: ActivityCursor? = try SendController.cursor(request)
        let limit = try SendController.limit(request.queryParameter("limit"))
        let page = try await store.activities(topic: topic, active: active, after: cursor, limit: limit)
        var members: [String: JSONValue] = ["activities": .array(page.activities.map { .object(Self.json($0)) })]
        if let next = page.next { members["next"] = .string(next.description) }
        return .json(.object(members))
    }

    /// The `status` filter of a list: `active` (running only), `ended`, or absent (`nil`: both).
    static func status(_ text: String?) throws(APIError) -> Bool? {
        switch text {
        case nil: nil
        case "active": true
        case "ended": false
        default: throw APIError.invalidField("status", "it must be active or ended, or absent for both")
        }
    }

    @Sendable func show(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let id = try Self.pathActivityID(context)
        let topic = try apps.app(named: try request.queryParameter("topic")).bundleID
        guard let activity = try await store.activity(topic: topic, id: id) else { throw Self.unknown(id, topic) }
        var members = Self.json(activity)
        members["devices"] = .integer(try await updateTokens(of: activity))
        return .json(.object(members))
    }

    /// How many update tokens an activity's devices registered: one indexed count (`devices_activity`).
    func updateTokens(of activity: ActivityRecord) async throws -> Int {
        try await store.count(matching: DeviceQuery.activity(activity.id).inTopic(activity.topic).kinds([.liveActivity]))
    }

    /// An update or the end as sent: the send's answer, and the activity as stored after it.
    struct Pushed {
        var send: SendController.Answer
        var activity: ActivityRecord
    }

    /// An update or the end: refused for an unknown or ended activity, else sent to its update tokens.
    private func push(_ id: String, fields: JSONFields, event: String, priority: Int, context: ServerRequestContext)
        async throws -> Pushed
    {
        var aps = try Self.content(fields, event: event, requiringState: event == "update")
        if event == "end", let dismissal = try fields.integer("dismissalDate", in: 0...Int(Int32.max)) {
            aps["dismissal-date"] = .integer(dismissal)
        }
        var send = Self.send(aps: aps, fields: fields, priority: priority)
        send["target"] = .object(["activity": .string(id)])
        let plan = try SendPlan(json: .object(send), apps: apps, sendID: SendID(at: clock.now()), at: clock.now())
        let activity: ActivityRecord
        switch try await store.recordActivityPush(topic: plan.bundleID, id: id, ending: event == "end") {
        case .recorded(let recorded):
            activity = recorded
        case .ended:
            throw APIError(
                .conflict, reason: "activityEnded",
                "The activity \(id) has ended: it takes no update or end. Start a new one with its own id.")
        case .unknown:
            throw Self.unknown(id, plan.bundleID)
        }
        metrics.activityPush(event: event, priority: Self.priority(of: plan), via: .devices)
        return Pushed(send: try await perform(plan, context: context), activity: activity)
    }

    /// Sends a start, update or end through the engine, answered as a send is.
    private func perform(_ plan: SendPlan, context: ServerRequestContext) async throws -> SendController.Answer {
        SendController.answer(try await engine.accept(plan, logger: context.logger), context: context)
    }

    private func answer(_ pushed: Pushed) -> Response {
        answer(pushed.send, pushed.activity)
    }

    private func answer(_ answer: SendController.Answer, _ activity: ActivityRecord) -> Response {
        var body = answer.body
        if case .object(var members) = body {
            members["activity"] = .object(Self.json(activity))
            body = .object(members)
        }
        return .json(body, status: answer.status)
    }

    /// The `aps` of an activity push: its event, content state and the optional presentation keys.
    static func content(_ fields: JSONFields, event: String, requiringState: Bool) throws(APIError)
        -> [String: JSONValue]
    {
        var aps: [String: JSONValue] = ["event": .string(event)]
        if let state = try fields.object("contentState") {
            aps["content-state"] = .object(state)
        } else if requiringState {
            throw APIError.invalidField("contentState", "give the activity's ContentState as an object")
        } else {
            // An end without a final state keeps what the device shows.
            aps["content-state"] = .object([:])
        }
        if let alert = fields["alert"] { aps["alert"] = alert }
        if let sound = fields["sound"] { aps["sound"] = sound }
        if let stale = try fields.integer("staleDate", in: 0...Int(Int32.max)) { aps["stale-date"] = .integer(stale) }
        if let score = fields["relevanceScore"] {
            guard let number = score.doubleValue else {
                throw APIError.invalidField("relevanceScore", "it must be a number")
            }
            aps["relevance-score"] = .number(number)
        }
        return aps
    }

    /// The send request of an activity push: a raw `liveactivity` payload.
    private static func send(aps: [String: JSONValue], fields: JSONFields, priority: Int) -> [String: JSONValue] {
        var send: [String: JSONValue] = [
            "pushType": "liveactivity", "payload": .object(["aps": .object(aps)]),
            "priority": fields["priority"] ?? .integer(priority),
        ]
        if let topic = fields["topic"] { send["topic"] = topic }
        for name in scheduleFields { if let value = fields[name] { send[name] = value } }
        return send
    }

    private static func priority(of plan: SendPlan) -> Int {
        plan.preparedVariants[""]?.priority?.rawValue ?? 10
    }

    /// A JSON object body with only the given keys; an end may have none.
    static func body(_ request: Request, limit: Int, allowed: Set<String>, emptyAllowed: Bool = false)
        async throws -> JSONFields
    {
        let bytes = try await request.bodyBytes(limit: limit)
        if emptyAllowed, bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return JSONFields([:])
        }
        let fields = try JSONFields(body: bytes)
        try TextRules.checkNoNUL(in: .object(fields.members))
        if let unknown = fields.members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError.invalidField(
                unknown, "it is not a field of this request: use \(allowed.sorted().joined(separator: ", "))")
        }
        return fields
    }

    /// The path's `{id}`, percent-decoded (an id may hold a space or a `/`), and checked.
    private static func pathActivityID(_ context: ServerRequestContext) throws(APIError) -> String {
        guard let encoded = context.parameters.get("id"), let id = encoded.removingPercentEncoding else {
            throw APIError.invalidField("id", "give the activity id percent-encoded in the path (% as %25)")
        }
        return try activityID(id)
    }

    /// An activity id as the app gave it, checked: from the path, or the console's form.
    static func activityID(_ text: String?) throws(APIError) -> String {
        guard let id = text, !id.isEmpty,
            id.utf8.count <= TokenRegistration.maximumActivityIDBytes, !TextRules.hasControlCharacter(id)
        else {
            throw APIError.invalidField("id", "an activity id has 1 to 256 bytes and no control characters")
        }
        return id
    }

    private static func unknown(_ id: String, _ topic: String) -> APIError {
        APIError(
            .notFound, reason: "unknownActivity",
            "The app \(topic) has no activity \(id): start it with POST /api/activities first.")
    }

    static func json(_ activity: ActivityRecord) -> [String: JSONValue] {
        var members: [String: JSONValue] = [
            "id": .string(activity.id), "topic": .string(activity.topic),
            "activityType": .string(activity.activityType),
            "status": .string(activity.isActive ? "active" : "ended"), "updates": .integer(activity.updates),
            "createdAt": .string(RFC3339.string(activity.createdAt)),
            "updatedAt": .string(RFC3339.string(activity.updatedAt)),
        ]
        if let ended = activity.endedAt { members["endedAt"] = .string(RFC3339.string(ended)) }
        return members
    }
}
