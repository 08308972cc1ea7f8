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
/// `GET /api/activities` lists an app's activities newest first. A key scoped to apps is refused another app's
/// (`403 appNotAllowed`); one scoped to an environment starts activities in it only, and cannot update or end one,
/// which pushes to both environments' devices: ``Sends`` checks, as for the console's *End*.
///
/// Each push is a send of push type `liveactivity` through the send path (validated, recorded, inline or queued, with
/// its outcomes and receipts): the answer is the send, plus the activity. Updates default to priority 5, which
/// ActivityKit does not budget; an update with an alert, a start and an end default to 10 (docs/live-activities.md).
struct ActivityController: Sendable {
    let store: any Store
    let apps: AppDirectory
    let operations: ActivityOperations
    let limits: ServerConfiguration.Limits

    /// - Parameter group: The routes of the `send` scope, behind its key check and idempotency keys.
    func addRoutes(to group: RouterGroup<ServerRequestContext>) {
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
        "topic", "contentState", "alert", "sound", "staleDate", "relevanceScore", "priority", "force",
    ]).union(scheduleFields)
    /// A start or an update can wait for its time and be paced like any send; an end cannot, since it ends the
    /// activity for the API at once.
    private static let scheduleFields = ActivityOperations.scheduleFields
    private static let endFields: Set<String> = [
        "topic", "contentState", "alert", "sound", "staleDate", "relevanceScore", "priority", "dismissalDate",
    ]

    @Sendable func start(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await RequestFields.read(request, limit: limits.sendBodyBytes, allowed: Self.startFields)
        let started = try await operations.start(ActivityStart(json: fields), by: context.caller)
        return answer(started, context: context)
    }

    @Sendable func update(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await RequestFields.read(request, limit: limits.sendBodyBytes, allowed: Self.updateFields)
        let pushed = try await operations.push(
            ActivityChange(.update, json: fields), to: try Self.pathActivityID(context), by: context.caller)
        return answer(pushed, context: context)
    }

    @Sendable func end(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await RequestFields.read(
            request, limit: limits.sendBodyBytes, allowed: Self.endFields, emptyAllowed: true)
        let id = try Self.pathActivityID(context)
        let ended = try await operations.push(ActivityChange(.end, json: fields), to: id, by: context.caller)
        return answer(ended, context: context)
    }

    /// An app's activities, newest first, one page at a time (`?topic=&status=active|ended&after=<cursor>&limit=`,
    /// default 100). Each is shown as by `GET /api/activities/{id}` but without `devices` and `budget`: a count and
    /// a budget read per listed activity would make a page cost as many reads as rows.
    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let topic = try apps.app(named: try request.queryParameter("topic"), for: context.access).bundleID
        let active = try ActivityOperations.status(request.queryParameter("status"))
        let cursor: ActivityCursor? = try SendController.cursor(request)
        let limit = try SendController.limit(request.queryParameter("limit"))
        let page = try await store.activities(topic: topic, active: active, after: cursor, limit: limit)
        var members: [String: JSONValue] = ["activities": .array(page.activities.map { .object(ActivityOperations.json($0)) })]
        if let next = page.next { members["next"] = .string(next.description) }
        return .json(.object(members))
    }

    @Sendable func show(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let id = try Self.pathActivityID(context)
        let topic = try apps.app(named: try request.queryParameter("topic"), for: context.access).bundleID
        guard let activity = try await store.activity(topic: topic, id: id) else { throw ActivityOperations.unknown(id, topic) }
        var members = ActivityOperations.json(activity)
        members["devices"] = .integer(try await operations.updateTokens(of: activity))
        if operations.updateBudget > 0 {
            let use = try await store.activityBudgetUse(topic: topic, activityID: id, at: operations.clock.now())
            members["budget"] = .object([
                "limit": .integer(operations.updateBudget), "spentThisHour": .integer(use.spent),
                "downgradedThisHour": .integer(use.downgraded), "hour": .string(RFC3339.string(use.hour)),
            ])
        }
        return .json(.object(members))
    }

    /// A start, update or end answered as a send is, with the activity.
    private func answer(_ pushed: ActivityOperations.Pushed, context: ServerRequestContext) -> Response {
        let answer = SendController.answer(pushed.accepted, context: context)
        var body = answer.body
        if case .object(var members) = body {
            members["activity"] = .object(ActivityOperations.json(pushed.activity))
            if let budget = pushed.budget { members["budget"] = ActivityOperations.json(budget) }
            if let perSecond = pushed.pushToStartPace {
                members["pushToStartPace"] = ActivityOperations.json(
                    pushToStartPace: perSecond, targetCount: pushed.accepted.record.targetCount ?? 0)
            }
            body = .object(members)
        }
        return .json(body, status: answer.status)
    }

    /// The path's `{id}`, percent-decoded (an id may hold a space or a `/`), and checked.
    private static func pathActivityID(_ context: ServerRequestContext) throws(APIError) -> String {
        guard let encoded = context.parameters.get("id"), let id = encoded.removingPercentEncoding else {
            throw APIError.invalidField("id", "give the activity id percent-encoded in the path (% as %25)")
        }
        return try ActivityOperations.activityID(id)
    }
}
