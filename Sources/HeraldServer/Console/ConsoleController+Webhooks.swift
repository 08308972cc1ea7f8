import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldWebhooks
import Hummingbird
import Logging

/// The console's Webhooks page: endpoints with their state, why one is paused, what waits, recent deliveries
/// (status and latency); register, pause, resume, send a test event, replay the dead letter, delete.
extension ConsoleController {
    func addWebhookRoutes(to router: RouterGroup<ServerRequestContext>) {
        router.get("/console/webhooks", use: webhooks)
        router.post("/console/webhooks", use: createWebhook)
        router.post("/console/webhooks/{id}/{action}", use: webhookAction)
    }

    @Sendable func webhooks(_ request: Request, context: ServerRequestContext) async throws -> Response {
        var data: [String: Any] = [:]
        if let done = try request.queryParameter("done") { data["notice"] = Self.webhookNotices[done] }
        return try await webhooksPage(data, context: context)
    }

    private static let webhookNotices = [
        "pause": "The endpoint is paused: its events wait.",
        "resume": "The endpoint is active again: its waiting events are being delivered.",
        "test": "A webhook.test event is queued for delivery.",
        "replay": "The dead letter is back in the outbox, and the endpoint is active.",
        "delete": "The endpoint was deleted.",
    ]

    private func webhooksPage(
        _ extra: [String: Any], context: ServerRequestContext, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let csrf = context.consoleSession?.csrfToken ?? ""
        let queues = try await store.webhookQueues()
        var endpoints: [[String: Any]] = []
        // A session of a key limited to apps sees their endpoints only, as the key does through the API.
        for endpoint in try await store.webhookEndpoints(app: nil) where Self.access(context).sees(app: endpoint.app) {
            let queue = queues[endpoint.id] ?? WebhookQueue()
            let deliveries = try await store.webhookDeliveries(of: endpoint.id, limit: 10).map { delivery -> [String: Any] in
                [
                    "at": Self.display(delivery.at), "delivered": delivery.delivered, "events": delivery.eventCount,
                    "status": delivery.statusCode.map(String.init) ?? "—",
                    "latency": String(format: "%.1f", WebhookController.milliseconds(delivery.latency)),
                    "error": delivery.error ?? "",
                ]
            }
            var row: [String: Any] = [
                "id": endpoint.id.uuidString.lowercased(), "url": endpoint.url, "app": endpoint.app,
                "active": endpoint.status == .active, "pending": queue.pending, "deadCount": queue.dead,
                "hasDead": queue.dead > 0, "failing": endpoint.consecutiveFailures > 0,
                "events": endpoint.events.map(\.rawValue).joined(separator: ", "), "deliveries": deliveries,
                "hasDeliveries": !deliveries.isEmpty, "csrf": csrf,
            ]
            if let oldest = queue.oldestPendingAt { row["oldest"] = Self.display(oldest) }
            if let reason = endpoint.pausedReason { row["pausedReason"] = reason }
            if !endpoint.description.isEmpty { row["description"] = endpoint.description }
            if endpoint.consecutiveFailures > 0 {
                row["failures"] = endpoint.consecutiveFailures
                row["nextAttempt"] = Self.display(endpoint.nextAttemptAt)
            }
            endpoints.append(row)
        }
        var data = extra
        data["endpoints"] = endpoints
        data["hasEndpoints"] = !endpoints.isEmpty
        data["apps"] = visibleApps(context)
        data["eventTypes"] = WebhookEventType.subscribable.map(\.rawValue)
        return renderer.page(
            "webhooks", title: "Webhooks", section: .webhooks, data: data, context: context, status: status)
    }

    @Sendable func createWebhook(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        let form = try await ConsoleForm.read(request, session: session)
        let app = form["topic"] ?? visibleApps(context).first ?? ""
        let url = (form["url"] ?? "").trimmingCharacters(in: .whitespaces)
        let description = (form["description"] ?? "").trimmingCharacters(in: .whitespaces)
        func refuse(_ message: String) async throws -> Response {
            try await webhooksPage(["error": message], context: context, status: .badRequest)
        }
        guard visibleApps(context).contains(app) else { return try await refuse("Pick one of this server's apps.") }
        if let problem = WebhookEndpointRules.problem(withURL: url) { return try await refuse("The URL: \(problem).") }
        guard description.utf8.count <= WebhookEndpointRules.maximumDescriptionBytes,
            !TextRules.hasControlCharacter(description)
        else { return try await refuse("The description: at most 500 bytes, without control characters.") }
        let events: [WebhookEventType]
        do {
            events = try WebhookEndpointRules.eventTypes(form.all("event"))
        } catch {
            return try await refuse("\(error.description).")
        }
        guard !events.isEmpty else { return try await refuse("Pick at least one event type.") }
        let secret = WebhookSecret.make()
        let endpoint = try await store.createWebhookEndpoint(
            NewWebhookEndpoint(app: app, url: url, events: events, description: description, secret: secret))
        context.logger.notice("Console registered webhook endpoint \(endpoint.id) for \(app)")
        await audit.record(
            .webhookCreated, context, app: app, subject: endpoint.id.lowercasedText,
            detail: WebhookEndpointRules.auditDetail(url: url, events: events))
        return try await webhooksPage(["created": ["secret": secret]], context: context, status: .created)
    }

    @Sendable func webhookAction(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        // Another app's endpoint is as unknown to a session limited to apps as a missing one.
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
            let endpoint = try await store.webhookEndpoint(id), Self.access(context).sees(app: endpoint.app)
        else {
            throw APIError(.notFound, reason: "unknownWebhook", "There is no such webhook endpoint: pick one from the list.")
        }
        let action = context.parameters.get("action") ?? ""
        // What the audit log records of it (a test event changes nothing), when the store found the endpoint.
        var change: (kind: AuditAction, detail: String)?
        switch action {
        case "pause":
            if try await store.setWebhookEndpoint(id, paused: WebhookEndpointRules.pausedByAdministrator) != nil {
                change = (.webhookPaused, "")
            }
        case "resume":
            if try await store.setWebhookEndpoint(id, paused: nil) != nil { change = (.webhookResumed, "") }
        case "test":
            _ = try await store.enqueueWebhookEvent(
                WebhookEndpointRules.testEvent(app: endpoint.app, at: clock.now()), for: id)
        case "replay":
            if let count = try await store.replayWebhookDeadLetter(of: id) {
                change = (.webhookReplayed, "\(count) dead-letter events")
            }
        case "delete":
            if try await store.deleteWebhookEndpoint(id) {
                change = (.webhookDeleted, WebhookEndpointRules.auditDetail(url: endpoint.url, events: endpoint.events))
            }
        default: throw HTTPError(.notFound)
        }
        context.logger.notice("Console: webhook endpoint \(id): \(action)")
        if let change {
            await audit.record(change.kind, context, app: endpoint.app, subject: id.lowercasedText, detail: change.detail)
        }
        return Self.redirect("/console/webhooks?done=\(action)")
    }
}
