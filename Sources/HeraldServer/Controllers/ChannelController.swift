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
struct ChannelController: Sendable {
    let store: any Store
    let keys: APIKeyVerifier
    let apps: AppDirectory
    let senders: APNSSenders
    let engine: SendEngine
    let limits: ServerConfiguration.Limits
    let clock: any WallClock

    /// The largest page `GET /api/channels` gives.
    static let maximumPageSize = 1_000

    func addRoutes(to router: Router<ServerRequestContext>) {
        let group = router.group().add(middleware: APIKeyAuthenticator(keys: keys, scope: .send))
        group.post("/api/channels", use: create)
        group.get("/api/channels", use: list)
        group.get("/api/channels/{id}", use: show)
        group.delete("/api/channels/{id}", use: delete)
        group.post("/api/channels/{id}/broadcast", use: broadcast)
    }

    private static let createFields: Set<String> = ["topic", "environment", "storagePolicy"]

    @Sendable func create(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await ActivityController.body(request, limit: 4 * 1024, allowed: Self.createFields)
        let created = try await createChannel(fields, context: context)
        return .json(
            .object(["channel": .object(Self.json(created.channel)), "apnsRequestId": .string(created.apnsRequestID)]),
            status: .created)
    }

    /// A channel created on APNs and recorded.
    struct Created {
        var channel: ChannelRecord
        var apnsRequestID: String
    }

    /// Creates a channel on APNs with the app's client for an environment and records it, from the fields of
    /// ``createFields``: what `POST /api/channels` does, and the console's *Create channel*.
    func createChannel(_ fields: JSONFields, context: ServerRequestContext) async throws -> Created {
        let app = try apps.app(named: try fields.string("topic"))
        guard let name = try fields.string("environment") else {
            throw APIError(
                .badRequest, reason: "missingEnvironment",
                "The field \"environment\" is missing: a channel lives in one environment, development or production.")
        }
        let environment = try Self.environment(name, field: "environment")
        let policyValue = try fields.integer("storagePolicy", in: 0...1) ?? 0
        guard let policy = APNSMessageStoragePolicy(rawValue: policyValue) else {
            throw APIError.invalidField("storagePolicy", "it must be 0 (no message stored) or 1 (the most recent one)")
        }
        let client = try apnsClient(app.bundleID, environment)
        let reply: APNSChannelReply<APNSChannel>
        do {
            reply = try await client.createChannel(bundleID: app.bundleID, storagePolicy: policy)
        } catch {
            throw Self.failure(error)
        }
        let channel = NewChannel(
            id: reply.value.id.rawValue, topic: app.bundleID, environment: environment, storagePolicy: policy.rawValue)
        guard try await store.recordChannel(channel), let record = try await store.channel(id: channel.id) else {
            throw APIError(
                .badGateway, reason: "channelIdReused",
                "APNs created a channel with the id of one recorded already; APNs never reissues ids: check that this server talks to the APNs it expects."
            )
        }
        context.logger.info(
            "Channel created",
            metadata: [
                LogKey.channelID: "\(record.id)", LogKey.topic: "\(record.topic)",
                LogKey.environment: "\(environment)",
            ])
        return Created(channel: record, apnsRequestID: reply.requestID)
    }

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let topic = try apps.app(named: try request.queryParameter("topic")).bundleID
        let environment = try request.queryParameter("environment").map { text throws(APIError) in
            try Self.environment(text, field: "environment")
        }
        let after = try request.queryParameter("after").map { text throws(APIError) in
            try Self.channelID(text, field: "after").rawValue
        }
        let limit = try request.queryParameter("limit").map { text throws(APIError) in
            guard let number = Int(text), (1...Self.maximumPageSize).contains(number) else {
                throw APIError.invalidField("limit", "it must be a whole number from 1 to \(Self.maximumPageSize)")
            }
            return number
        } ?? 100
        let channels = try await store.liveChannels(topic: topic, environment: environment, after: after, limit: limit)
        var body: [String: JSONValue] = ["channels": .array(channels.map { .object(Self.json($0)) })]
        if channels.count == limit, let last = channels.last { body["next"] = .string(last.id) }
        return .json(.object(body))
    }

    @Sendable func show(_ request: Request, context: ServerRequestContext) async throws -> Response {
        .json(.object(Self.json(try await recorded(try Self.pathID(context)))))
    }

    @Sendable func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let deleted = try await deleteChannel(try Self.pathID(context), context: context)
        var body: [String: JSONValue] = ["channel": .object(Self.json(deleted.channel))]
        if let requestID = deleted.apnsRequestID { body["apnsRequestId"] = .string(requestID) }
        if deleted.unknownToAPNs {
            body["apnsReason"] = .string(APNSReason.channelNotRegistered.rawValue)
            body["message"] = .string("APNs no longer knew this channel; it is marked deleted here too.")
        }
        return .json(.object(body))
    }

    /// A channel deleted on APNs and marked deleted here.
    struct Deleted {
        /// The record, with its deletion time.
        var channel: ChannelRecord
        var apnsRequestID: String?
        /// APNs answered `ChannelNotRegistered`: it no longer knew the channel, which is marked deleted all the same.
        var unknownToAPNs: Bool
    }

    /// Deletes a live channel on APNs and marks it deleted: what `DELETE /api/channels/{id}` does, and the console's
    /// *Delete*.
    func deleteChannel(_ id: String, context: ServerRequestContext) async throws -> Deleted {
        let channel = try await live(id)
        let client = try apnsClient(channel.topic, channel.environment)
        let apnsID = try Self.channelID(channel.id, field: "id")
        var requestID: String?
        var unknownToAPNs = false
        do {
            requestID = try await client.deleteChannel(apnsID, bundleID: channel.topic).requestID
        } catch let error where error.reason == .channelNotRegistered {
            // APNs no longer knows it (deleted elsewhere, or the broadcast capability was switched off): it is gone
            // either way, so the record follows.
            unknownToAPNs = true
            requestID = error.requestID
        } catch {
            throw Self.failure(error)
        }
        guard let deleted = try await store.markChannelDeleted(id: channel.id) else { throw Self.unknown(channel.id) }
        context.logger.info("Channel deleted", metadata: [LogKey.channelID: "\(channel.id)"])
        return Deleted(channel: deleted, apnsRequestID: requestID, unknownToAPNs: unknownToAPNs)
    }

    /// Sends a broadcast now, answered with APNs's outcome (`200`; APNs's refusal as its 4xx), or schedules it for
    /// `sendAt` (`202`). Either way it is recorded as a send (`send` in the answer, `GET /api/sends/{id}`).
    @Sendable func broadcast(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let body = try await request.bodyBytes(limit: limits.sendBodyBytes)
        let fields = try JSONFields(body: body)
        try TextRules.checkNoNUL(in: .object(fields.members))
        let channel = try await live(try Self.pathID(context))
        let plan = try BroadcastPlan(fields, channel: channel, sendID: SendID(at: clock.now()), at: clock.now())
        var logger = context.logger
        logger[metadataKey: LogKey.sendID] = "\(plan.sendID)"
        logger[metadataKey: LogKey.channelID] = "\(channel.id)"
        let outcome: Broadcaster.Outcome
        let record: SendRecord
        switch try await engine.broadcast(plan) {
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
            throw Self.failure(error, send: record.id)
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

    /// A recorded channel, live or deleted.
    private func recorded(_ text: String) async throws -> ChannelRecord {
        let id = try Self.channelID(text, field: "id")
        guard let channel = try await store.channel(id: id.rawValue) else { throw Self.unknown(id.rawValue) }
        return channel
    }

    /// A recorded channel, refused once deleted.
    private func live(_ id: String) async throws -> ChannelRecord {
        let channel = try await recorded(id)
        guard channel.isLive else {
            throw APIError(
                .conflict, reason: "channelDeleted",
                "The channel \(channel.id) was deleted: it takes no broadcast and APNs never gives its id again. Create a new one."
            )
        }
        return channel
    }

    private func apnsClient(_ bundleID: String, _ environment: APNSEnvironment) throws(APIError) -> APNSClient {
        guard let client = senders.client(bundleID: bundleID, environment: environment) else {
            throw APIError(
                .badRequest, reason: "unknownTopic",
                "This server has no APNs client for \(bundleID) in \(environment): configure the app.")
        }
        return client
    }

    // MARK: Values

    static func environment(_ text: String, field: String) throws(APIError) -> APNSEnvironment {
        switch text {
        case "development": return .development
        case "production": return .production
        default: throw APIError.invalidField(field, "it must be development or production")
        }
    }

    static func channelID(_ text: String, field: String) throws(APIError) -> APNSChannelID {
        guard let id = APNSChannelID(text) else {
            throw APIError.invalidField(field, "a channel id is APNs's base64 id: 1 to 1,024 visible ASCII characters")
        }
        return id
    }

    private static func unknown(_ id: String) -> APIError {
        APIError(
            .notFound, reason: "unknownChannel",
            "This server has not created a channel \(id): create one with POST /api/channels, or list them with GET /api/channels."
        )
    }

    /// How APNs's refusal or silence answers: its own 4xx reasons as 4xx with that reason, never 5xx; no answer `502`.
    /// - Parameter send: The send a broadcast was recorded as, named in the message.
    private static func failure(_ error: APNSChannelError, send: SendID? = nil) -> APIError {
        let message = error.message + (send.map { " The broadcast is recorded as the failed send \($0)." } ?? "")
        if error.code == .rejected, let rejection = error.rejection {
            let status: HTTPResponse.Status =
                switch rejection.status {
                case 413: .contentTooLarge
                case 429: .tooManyRequests
                case 500...: .serviceUnavailable
                default: .badRequest
                }
            return APIError(status, reason: rejection.reason.rawValue, message)
        }
        if error.code == .invalidRequest { return APIError(.badRequest, reason: "invalidBroadcast", message) }
        return APIError(.badGateway, reason: "apnsUnavailable", message)
    }

    static func json(_ channel: ChannelRecord) -> [String: JSONValue] {
        var members: [String: JSONValue] = [
            "id": .string(channel.id), "topic": .string(channel.topic), "environment": .string(channel.environment.name),
            "storagePolicy": .integer(channel.storagePolicy), "status": .string(channel.isLive ? "live" : "deleted"),
            "createdAt": .string(RFC3339.string(channel.createdAt)),
        ]
        if let deleted = channel.deletedAt { members["deletedAt"] = .string(RFC3339.string(deleted)) }
        return members
    }
}
