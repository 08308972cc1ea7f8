import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// Broadcast channels (iOS 18+ Live Activities, apns-protocol.md §1.4) managed by the server (API key with the `send`
/// scope): `POST /api/channels` creates one on APNs with the app's client for an environment and records it,
/// `GET /api/channels` lists the live ones as recorded, `GET /api/channels/{id}` shows one, `DELETE /api/channels/{id}`
/// deletes it on APNs and marks it deleted, `POST /api/channels/{id}/broadcast` sends a Live Activity update or end to
/// every device subscribed to it, now or at `sendAt` (``BroadcastPlan``, ``Broadcaster``), recorded as a send.
///
/// A channel id is APNs's base64 string; in a path its `/` (and `+`, `=`) are percent-encoded. APNs's refusals answer
/// 4xx with APNs's reason (`BadExpirationDate`, `ChannelNotRegistered`, …), never 5xx; no answer from APNs is `502`.
/// A key scoped to apps or an environment sees its own channels only: another's is `404 unknownChannel`.
struct ChannelController: Sendable {
    let store: any Store
    let apps: AppDirectory
    let operations: ChannelOperations
    let engine: SendEngine
    let limits: ServerConfiguration.Limits
    let clock: any WallClock
    let audit: AuditTrail

    /// The largest page `GET /api/channels` gives.
    static let maximumPageSize = 1_000

    /// - Parameter group: The routes of the `send` scope, behind its key check and idempotency keys.
    func addRoutes(to group: RouterGroup<ServerRequestContext>) {
        group.post("/api/channels", use: create)
        group.get("/api/channels", use: list)
        group.get("/api/channels/{id}", use: show)
        group.delete("/api/channels/{id}", use: delete)
        group.post("/api/channels/{id}/broadcast", use: broadcast)
    }

    private static let createFields: Set<String> = ["topic", "environment", "storagePolicy"]

    @Sendable func create(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await RequestFields.read(request, limit: 4 * 1024, allowed: Self.createFields)
        let created = try await operations.createChannel(ChannelCreation(json: fields), by: context.caller)
        return .json(
            .object(["channel": .object(ChannelOperations.json(created.channel)), "apnsRequestId": .string(created.apnsRequestID)]),
            status: .created)
    }

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let topic = try apps.app(named: try request.queryParameter("topic"), for: context.access).bundleID
        var environment = try request.queryParameter("environment").map { text throws(APIError) in
            try ChannelOperations.environment(text, field: "environment")
        }
        if let only = context.access.environment {
            try context.access.check(environment: environment ?? only)
            environment = only
        }
        let after = try request.queryParameter("after").map { text throws(APIError) in
            try ChannelOperations.channelID(text, field: "after").rawValue
        }
        let limit = try request.queryParameter("limit").map { text throws(APIError) in
            guard let number = Int(text), (1...Self.maximumPageSize).contains(number) else {
                throw APIError.invalidField("limit", "it must be a whole number from 1 to \(Self.maximumPageSize)")
            }
            return number
        } ?? 100
        let channels = try await store.liveChannels(topic: topic, environment: environment, after: after, limit: limit)
        var body: [String: JSONValue] = ["channels": .array(channels.map { .object(ChannelOperations.json($0)) })]
        if channels.count == limit, let last = channels.last { body["next"] = .string(last.id) }
        return .json(.object(body))
    }

    @Sendable func show(_ request: Request, context: ServerRequestContext) async throws -> Response {
        .json(.object(ChannelOperations.json(try await operations.recorded(try Self.pathID(context), for: context.access))))
    }

    @Sendable func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let deleted = try await operations.deleteChannel(try Self.pathID(context), by: context.caller)
        var body: [String: JSONValue] = ["channel": .object(ChannelOperations.json(deleted.channel))]
        if let requestID = deleted.apnsRequestID { body["apnsRequestId"] = .string(requestID) }
        if deleted.unknownToAPNs {
            body["apnsReason"] = .string(APNSReason.channelNotRegistered.rawValue)
            body["message"] = .string("APNs no longer knew this channel; it is marked deleted here too.")
        }
        return .json(.object(body))
    }

    /// Sends a broadcast now, answered with APNs's outcome (`200`; APNs's refusal as its 4xx), or schedules it for
    /// `sendAt` (`202`). Either way it is recorded as a send (`send` in the answer, `GET /api/sends/{id}`).
    @Sendable func broadcast(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let body = try await request.bodyBytes(limit: limits.sendBodyBytes)
        let fields = try JSONFields(body: body)
        try TextRules.checkNoNUL(in: .object(fields.members))
        let channel = try await operations.live(try Self.pathID(context), for: context.access)
        let plan = try BroadcastPlan(fields, channel: channel, sendID: SendID(at: clock.now()), at: clock.now())
        var logger = context.logger
        logger[metadataKey: LogKey.sendID] = "\(plan.sendID)"
        logger[metadataKey: LogKey.channelID] = "\(channel.id)"
        let outcome: Broadcaster.Outcome
        let record: SendRecord
        let result = try await engine.broadcast(plan)
        await audit.record(
            .broadcastSent, context, app: channel.topic, subject: plan.sendID.description, detail: "channel \(channel.id)")
        switch result {
        case .scheduled(let record):
            logger.info("Scheduled a broadcast")
            return .json(
                .object(["channel": .string(channel.id), "send": SendController.json(record)]), status: .accepted,
                headers: [.location: "/api/sends/\(record.id)"])
        case .sent(let sent, let sentRecord):
            outcome = sent
            record = sentRecord
        }
        let reply: APNSChannelReply<APNSChannelID>
        switch outcome.result {
        case .success(let accepted):
            reply = accepted
        case .failure(.apns(let error)):
            logger.notice("A broadcast was not accepted", metadata: [LogKey.error: "\(outcome.message)"])
            throw ChannelOperations.failure(error, send: record.id)
        case .failure(.noClient(let message)):
            throw APIError(.badRequest, reason: "unknownTopic", message)
        }
        logger.info("Broadcast")
        return .json(
            .object([
                "channel": .string(channel.id), "apnsRequestId": .string(reply.requestID),
                "attempts": .integer(reply.attempts), "send": SendController.json(record),
            ]))
    }

    // MARK: Lookups

    /// The path's `{id}`, percent-decoded.
    private static func pathID(_ context: ServerRequestContext) throws(APIError) -> String {
        guard let encoded = context.parameters.get("id"), let text = encoded.removingPercentEncoding else {
            throw APIError.invalidField("id", "give a channel id, percent-encoded in the path")
        }
        return text
    }
}
