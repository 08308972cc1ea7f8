import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// Live Activities by the app's own activity id, as the API and the console drive them: a start on a target's
/// push-to-start tokens, an update or the end on every update token of the activity, each a `liveactivity` send
/// through the engine (validated, recorded, inline or queued). ``ActivityController`` reads requests into these calls
/// and the console reads its forms into them; neither calls the other.
///
/// Updates default to priority 5, which ActivityKit does not budget; an update with an alert, a start and an end
/// default to 10 (docs/live-activities.md).
struct ActivityOperations: Sendable {
    let store: any Store
    let apps: AppDirectory
    let engine: SendEngine
    let clock: any WallClock
    let metrics: ServerMetrics
    /// Priority-10 updates an activity may have per hour before later ones go at priority 5 (0: no budget).
    var updateBudget = ServerConfiguration.LiveActivities().updateBudget

    /// The keys a start, update or end shares with a send: it can wait for its time and be paced like any send.
    static let scheduleFields: Set<String> = ["sendAt", "localTime", "timeZone", "rate"]

    /// Starts an activity on the devices of its target (their push-to-start tokens), from the fields of
    /// `POST /api/activities`, and records it.
    func start(_ fields: JSONFields, logger: Logger) async throws -> Pushed {
        guard let id = try fields.string("activityId", bytes: 1...RegistrationRules.maximumActivityIDBytes) else {
            throw APIError.invalidField("activityId", "give the app's own id of the activity, such as an order number")
        }
        try TextRules.checkIdentifier(id, field: "activityId")
        guard let type = try fields.string("activityType", bytes: 1...RegistrationRules.maximumActivityTypeBytes)
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
        logger.info("Starting a Live Activity", metadata: ["herald.activity": "\(id)"])
        return Pushed(
            accepted: try await engine.accept(plan, logger: logger), activity: activity,
            pushToStartPace: engine.pushToStartPace(of: plan))
    }

    /// Ends a running activity on its update tokens, with the end's optional fields (`topic` picks the app): what
    /// `DELETE /api/activities/{id}` does, and the console's *End*.
    func end(_ id: String, fields: JSONFields, logger: Logger) async throws -> Pushed {
        try await push(id, fields: fields, event: "end", priority: 10, logger: logger)
    }

    /// Updates a running activity on its update tokens, from the fields of `PATCH /api/activities/{id}`: priority 10
    /// with an alert, else 5. A priority-10 update beyond the activity's hourly budget goes at priority 5 unless the
    /// request has `"priority": 10` and `"force": true` (docs/live-activities.md, "Update budget").
    func update(_ id: String, fields: JSONFields, logger: Logger) async throws -> Pushed {
        let force = try fields.bool("force") ?? false
        if force, try fields.integer("priority") != 10 {
            throw APIError.invalidField(
                "force", "\"force\": true insists on priority 10 beyond the budget: give it with \"priority\": 10")
        }
        return try await push(
            id, fields: fields, event: "update", priority: fields["alert"] != nil ? 10 : 5, force: force, logger: logger)
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

    /// How many update tokens an activity's devices registered: one indexed count (`devices_activity`).
    func updateTokens(of activity: ActivityRecord) async throws -> Int {
        try await store.count(matching: DeviceQuery.activity(activity.id).inTopic(activity.topic).kinds([.liveActivity]))
    }

    /// A start, update or end as sent: the send, and the activity as stored after it.
    struct Pushed {
        var accepted: SendEngine.Accepted
        var activity: ActivityRecord
        /// For a priority-10 update under a budget: how it was counted.
        var budget: BudgetDecision? = nil
        /// For a start while starts are paced: its app's push-to-start notifications per second.
        var pushToStartPace: Int? = nil
    }

    /// How a priority-10 update was counted against its activity's hourly budget.
    struct BudgetDecision {
        /// The priority it went at: 10, or 5 when it was downgraded.
        var priority: Int
        /// It went at 10 beyond the budget because the caller insisted.
        var forced: Bool
        /// Priority-10 updates the activity may have per hour.
        var limit: Int
        /// The activity's hour so far, this update included.
        var use: ActivityBudgetUse

        var downgraded: Bool { priority != 10 }
    }

    /// An update or the end: refused for an unknown or ended activity, else sent to its update tokens.
    private func push(
        _ id: String, fields: JSONFields, event: String, priority: Int, force: Bool = false, logger: Logger
    ) async throws -> Pushed {
        var aps = try Self.content(fields, event: event, requiringState: event == "update")
        if event == "end", let dismissal = try fields.integer("dismissalDate", in: 0...Int(Int32.max)) {
            aps["dismissal-date"] = .integer(dismissal)
        }
        var send = Self.send(aps: aps, fields: fields, priority: priority)
        send["target"] = .object(["activity": .string(id)])
        var plan = try SendPlan(json: .object(send), apps: apps, sendID: SendID(at: clock.now()), at: clock.now())
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
        var budget: BudgetDecision?
        if event == "update", updateBudget > 0, Self.priority(of: plan) == 10 {
            let use = try await store.spendActivityBudget(
                topic: plan.bundleID, activityID: id, budget: updateBudget, force: force, at: clock.now())
            budget = BudgetDecision(
                priority: use.fitted ? 10 : 5, forced: force && use.spent > updateBudget, limit: updateBudget, use: use)
            if !use.fitted {
                // Over budget: the same update at priority 5, which ActivityKit delivers when the device sees fit.
                send["priority"] = .integer(5)
                plan = try SendPlan(json: .object(send), apps: apps, sendID: plan.sendID, at: clock.now())
                metrics.activityUpdateDowngraded(app: plan.bundleID)
                logger.info(
                    "Sent a Live Activity update at priority 5: its hourly budget of priority-10 updates is spent",
                    metadata: ["herald.activity": "\(id)", "herald.budget": "\(updateBudget)"])
            } else if budget?.forced == true {
                metrics.activityUpdateForced(app: plan.bundleID)
            }
        }
        metrics.activityPush(event: event, priority: Self.priority(of: plan), via: .devices)
        return Pushed(accepted: try await engine.accept(plan, logger: logger), activity: activity, budget: budget)
    }

    /// A budget decision as the API shows it.
    static func json(_ decision: BudgetDecision) -> JSONValue {
        .object([
            "priority": .integer(decision.priority), "downgraded": .bool(decision.downgraded),
            "forced": .bool(decision.forced), "limit": .integer(decision.limit),
            "spentThisHour": .integer(decision.use.spent), "downgradedThisHour": .integer(decision.use.downgraded),
            "hour": .string(RFC3339.string(decision.use.hour)),
        ])
    }

    /// A paced start's pace: the app's rate, and the fewest seconds its target takes at that rate (more while other
    /// starts of the app share it).
    static func json(pushToStartPace perSecond: Int, targetCount: Int) -> JSONValue {
        .object([
            "perSecond": .integer(perSecond),
            "minimumSeconds": .integer((targetCount + perSecond - 1) / perSecond),
        ])
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

    /// An activity id as the app gave it, checked: from the path, or the console's form.
    static func activityID(_ text: String?) throws(APIError) -> String {
        guard let id = text, !id.isEmpty,
            id.utf8.count <= RegistrationRules.maximumActivityIDBytes, !TextRules.hasControlCharacter(id)
        else {
            throw APIError.invalidField("id", "an activity id has 1 to 256 bytes and no control characters")
        }
        return id
    }

    static func unknown(_ id: String, _ topic: String) -> APIError {
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
