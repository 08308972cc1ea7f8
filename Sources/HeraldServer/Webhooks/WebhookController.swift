import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldWebhooks
import Hummingbird
import Logging

/// Webhook endpoints (docs/integrations.md), managed with an API key with the `admin` scope:
/// `POST /api/webhooks` registers one for an app and answers its secret (once), `GET /api/webhooks` lists them,
/// `GET /api/webhooks/{id}` shows one with its queue and recent deliveries, `PATCH` changes its URL, events or
/// description or pauses and resumes it, `DELETE` deletes it with its outbox, `POST …/rotate-secret` makes a new
/// secret (the old one signs beside it for an overlap), `POST …/test` queues a `webhook.test` event,
/// `GET …/deliveries` lists its deliveries, and `POST …/replay` sends its dead letter again.
struct WebhookController: Sendable {
    let store: any Store
    let endpoints: WebhookEndpoints

    static let createFields: Set<String> = ["topic", "url", "events", "description"]
    static let updateFields: Set<String> = ["url", "events", "description", "paused"]
    static let rotateFields: Set<String> = ["overlapSeconds"]
    /// The largest page of deliveries.
    static let maximumDeliveries = 200

    /// - Parameter group: The routes of the `admin` scope, behind its key check.
    func addRoutes(to group: RouterGroup<ServerRequestContext>) {
        group.post("/api/webhooks", use: create)
        group.get("/api/webhooks", use: list)
        group.get("/api/webhooks/{id}", use: show)
        group.patch("/api/webhooks/{id}", use: update)
        group.delete("/api/webhooks/{id}", use: delete)
        group.post("/api/webhooks/{id}/rotate-secret", use: rotate)
        group.post("/api/webhooks/{id}/test", use: test)
        group.get("/api/webhooks/{id}/deliveries", use: deliveries)
        group.post("/api/webhooks/{id}/replay", use: replay)
    }

    @Sendable func create(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let fields = try await RequestFields.read(request, limit: 16 * 1024, allowed: Self.createFields)
        let (endpoint, secret) = try await endpoints.register(
            WebhookEndpoints.Registration(json: fields), by: context.caller)
        return .json(.object(["endpoint": Self.json(endpoint), "secret": .string(secret)]), status: .created)
    }

    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let found = try await endpoints.list(topic: try request.queryParameter("topic"), for: context.caller)
        let reveal = Self.revealsURLs(to: context)
        return .json(.object(["endpoints": .array(found.map { Self.json($0, revealingURL: reveal) })]))
    }

    @Sendable func show(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let endpoint = try await endpoints.endpoint(try Self.pathID(context), for: context.caller)
        let queue = try await store.webhookQueues()[endpoint.id] ?? WebhookQueue()
        let deliveries = try await store.webhookDeliveries(of: endpoint.id, limit: 20)
        return .json(
            .object([
                "endpoint": Self.json(endpoint, revealingURL: Self.revealsURLs(to: context)), "queue": Self.json(queue),
                "deliveries": .array(deliveries.map(Self.json)),
            ]))
    }

    @Sendable func update(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let id = try Self.pathID(context)
        // An unknown id answers 404 before its body is read.
        _ = try await endpoints.endpoint(id, for: context.caller)
        let fields = try await RequestFields.read(request, limit: 16 * 1024, allowed: Self.updateFields)
        let endpoint = try await endpoints.change(id, WebhookEndpoints.Change(json: fields), by: context.caller)
        return .json(.object(["endpoint": Self.json(endpoint)]))
    }

    @Sendable func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try await endpoints.delete(try Self.pathID(context), by: context.caller)
        return Response(status: .noContent)
    }

    @Sendable func rotate(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let id = try Self.pathID(context)
        _ = try await endpoints.endpoint(id, for: context.caller)
        let fields = try await RequestFields.read(
            request, limit: 1024, allowed: Self.rotateFields, emptyAllowed: true)
        let overlap = try fields.integer("overlapSeconds", in: 0...2_592_000).map { Duration.seconds($0) }
        let rotation = try await endpoints.rotateSecret(of: id, overlap: overlap, by: context.caller)
        return .json(.object(["endpoint": Self.json(rotation.endpoint), "secret": .string(rotation.secret)]))
    }

    @Sendable func test(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let endpoint = try await endpoints.sendTestEvent(to: try Self.pathID(context), by: context.caller)
        return .json(
            .object([
                "queued": .bool(true),
                "message": .string(
                    endpoint.status == .paused
                        ? "Queued; the endpoint is paused: resume it to deliver." : "Queued for delivery."),
            ]), status: .accepted)
    }

    @Sendable func deliveries(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let endpoint = try await endpoints.endpoint(try Self.pathID(context), for: context.caller)
        let limit = try request.queryParameter("limit").map { text throws(APIError) in
            guard let number = Int(text), (1...Self.maximumDeliveries).contains(number) else {
                throw APIError.invalidField("limit", "it must be a whole number from 1 to \(Self.maximumDeliveries)")
            }
            return number
        } ?? 50
        let deliveries = try await store.webhookDeliveries(of: endpoint.id, limit: limit)
        return .json(.object(["deliveries": .array(deliveries.map(Self.json))]))
    }

    @Sendable func replay(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (count, endpoint) = try await endpoints.replayDeadLetter(of: try Self.pathID(context), by: context.caller)
        return .json(.object(["replayed": .integer(count), "endpoint": Self.json(endpoint)]))
    }

    // MARK: Helpers

    static func pathID(_ context: ServerRequestContext) throws(APIError) -> UUID {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
            throw APIError(.notFound, reason: "unknownWebhook", "There is no webhook endpoint with this id.")
        }
        return id
    }

    /// An endpoint: `createdAt, description, events, id, status, topic, updatedAt, url`, then when set
    /// `consecutiveFailures`/`nextAttemptAt` (failing), `pausedAt`/`pausedReason` (paused) and
    /// `previousSecretExpiresAt` (rotating) — keys sorted.
    /// Whether endpoints show their whole URL: to the keys that may change them (`admin`), not to `read` keys.
    static func revealsURLs(to context: ServerRequestContext) -> Bool { context.apiKey?.allows(.admin) ?? false }

    /// An endpoint as the API shows it; `revealingURL: false` leaves its URL's query out (a `read` key's view: a
    /// receiver's token may ride there, as the audit log knows).
    static func json(_ endpoint: WebhookEndpoint, revealingURL: Bool = true) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(endpoint.id.uuidString.lowercased()), "topic": .string(endpoint.app),
            "url": .string(revealingURL ? endpoint.url : WebhookEndpointRules.shownURL(endpoint.url)), "events": .array(endpoint.events.map { .string($0.rawValue) }),
            "description": .string(endpoint.description), "status": .string(endpoint.status.rawValue),
            "createdAt": .string(RFC3339.string(endpoint.createdAt)),
            "updatedAt": .string(RFC3339.string(endpoint.updatedAt)),
            "consecutiveFailures": .integer(endpoint.consecutiveFailures),
        ]
        if endpoint.consecutiveFailures > 0 {
            members["nextAttemptAt"] = .string(RFC3339.string(endpoint.nextAttemptAt))
        }
        if let reason = endpoint.pausedReason { members["pausedReason"] = .string(reason) }
        if let at = endpoint.pausedAt { members["pausedAt"] = .string(RFC3339.string(at)) }
        if let at = endpoint.previousSecretExpiresAt { members["previousSecretExpiresAt"] = .string(RFC3339.string(at)) }
        return .object(members)
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func json(_ queue: WebhookQueue) -> JSONValue {
        var members: [String: JSONValue] = ["pending": .integer(queue.pending), "dead": .integer(queue.dead)]
        if let oldest = queue.oldestPendingAt { members["oldestPendingAt"] = .string(RFC3339.string(oldest)) }
        return .object(members)
    }

    /// A delivery: `at, delivered, events, id, latencyMs`, and `status` and `error` when there are.
    static func json(_ delivery: WebhookDelivery) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(String(delivery.id)), "at": .string(RFC3339.string(delivery.at)),
            "events": .integer(delivery.eventCount), "delivered": .bool(delivery.delivered),
            "latencyMs": .number((Self.milliseconds(delivery.latency) * 10).rounded() / 10),
        ]
        if let status = delivery.statusCode { members["status"] = .integer(status) }
        if let error = delivery.error { members["error"] = .string(error) }
        return .object(members)
    }
}
