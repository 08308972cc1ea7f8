import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// Live Activities by the app's own activity id, as the API and the console drive them: a start on a target's
/// push-to-start tokens, an update or the end on every update token of the activity, each a `liveactivity` send
/// through the engine (validated, recorded, inline or queued) composed by ``Sends`` with the caller's one access check.
/// ``ActivityController`` decodes requests into the typed commands (``ActivityStart``, ``ActivityChange``) and the
/// console builds them from its forms; neither calls the other.
///
/// Updates default to priority 5, which ActivityKit does not budget; an update with an alert, a start and an end
/// default to 10 (docs/live-activities.md).
struct ActivityOperations: Sendable {
    let store: any Store
    let sends: Sends
    let engine: SendEngine
    let clock: any WallClock
    let metrics: ServerMetrics
    /// Where a start and an end are recorded (an update is everyday traffic).
    let audit: AuditTrail
    /// Priority-10 updates an activity may have per hour before later ones go at priority 5 (0: no budget).
    var updateBudget = ServerConfiguration.LiveActivities().updateBudget
    /// Whether starts are checked for devices they started nothing on (``PushToStartChecks``).
    var checksStarts = ServerConfiguration.LiveActivities().startCheckAfter > 0

    /// The keys a start, update or end shares with a send: it can wait for its time and be paced like any send.
    static let scheduleFields: Set<String> = ["sendAt", "localTime", "timeZone", "rate"]

    /// Starts an activity on the devices of its target (their push-to-start tokens) for `caller`, and records it (and
    /// in the audit log).
    func start(_ start: ActivityStart, by caller: Caller) async throws -> Pushed {
        let logger = caller.logger
        let plan = try sends.plan(start.sendRequest, for: caller.access)
        guard
            let activity = try await store.createActivity(
                NewActivity(
                    topic: plan.bundleID, id: start.id, activityType: start.activityType,
                    startSendID: checksStarts ? plan.sendID : nil, channelID: start.inputPushChannel))
        else {
            throw APIError(
                .conflict, reason: "activityExists",
                "The app \(plan.bundleID) has an activity \(start.id) already: give each activity its own id.")
        }
        metrics.activityPush(event: "start", priority: Self.priority(of: plan), via: .devices)
        logger.info("Starting a Live Activity", metadata: ["herald.activity": "\(start.id)"])
        let pushed = Pushed(
            accepted: try await engine.accept(plan, logger: logger), activity: activity,
            pushToStartPace: engine.pushToStartPace(of: plan))
        await audit.record(
            .activityStarted, by: caller, app: activity.topic, subject: activity.id, detail: activity.activityType)
        return pushed
    }

    /// Updates or ends a running activity on its update tokens for `caller`. A priority-10 update beyond the
    /// activity's hourly budget goes at priority 5 unless it is forced (docs/live-activities.md, "Update budget").
    /// - Throws: ``APIError`` `404 unknownActivity`, `409 activityEnded`, or what ``Sends`` refuses.
    func push(_ change: ActivityChange, to id: String, by caller: Caller) async throws -> Pushed {
        let logger = caller.logger
        var request = change.sendRequest(activity: id)
        var plan = try sends.plan(request, for: caller.access)
        let activity: ActivityRecord
        switch try await store.recordActivityPush(topic: plan.bundleID, id: id, ending: change.event == .end) {
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
        if change.event == .update, updateBudget > 0, Self.priority(of: plan) == 10 {
            let use = try await store.spendActivityBudget(
                topic: plan.bundleID, activityID: id, budget: updateBudget, force: change.force, at: clock.now())
            budget = BudgetDecision(
                priority: use.fitted ? 10 : 5, forced: change.force && use.spent > updateBudget, limit: updateBudget,
                use: use)
            if !use.fitted {
                // Over budget: the same update at priority 5, which ActivityKit delivers when the device sees fit.
                request.priority = .considerPower
                plan = try sends.plan(request, for: caller.access, sendID: plan.sendID)
                metrics.activityUpdateDowngraded(app: plan.bundleID)
                logger.info(
                    "Sent a Live Activity update at priority 5: its hourly budget of priority-10 updates is spent",
                    metadata: ["herald.activity": "\(id)", "herald.budget": "\(updateBudget)"])
            } else if budget?.forced == true {
                metrics.activityUpdateForced(app: plan.bundleID)
            }
        }
        metrics.activityPush(event: change.event.rawValue, priority: Self.priority(of: plan), via: .devices)
        let pushed = Pushed(accepted: try await engine.accept(plan, logger: logger), activity: activity, budget: budget)
        if change.event == .end { await audit.record(.activityEnded, by: caller, app: activity.topic, subject: id) }
        return pushed
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
        if let check = activity.startCheck {
            members["startCheck"] = .object([
                "started": .integer(check.started), "notStarted": .integer(check.notStarted),
                "checkedAt": .string(RFC3339.string(check.checkedAt)),
            ])
        }
        return members
    }
}
