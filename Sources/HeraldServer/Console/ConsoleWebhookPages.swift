import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldWebhooks
import Hummingbird
import Logging

/// The console's Webhooks page: endpoints with their state, why one is paused, what waits, recent deliveries
/// (status and latency); register, pause, resume, send a test event, replay the dead letter, delete.
struct ConsoleWebhookPages: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]
    let webhooks: WebhookEndpoints

    /// The page and its forms: an admin's.
    func addRoutes(to router: RouterGroup<ServerRequestContext>) {
        router.get("/console/webhooks", use: webhooks)
        router.post("/console/webhooks", use: createWebhook)
        router.post("/console/webhooks/{id}/{action}", use: webhookAction)
    }

    @Sendable func webhooks(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let notice = try request.queryParameter("done").flatMap { Self.webhookNotices[$0] }
        return try await webhooksPage(WebhooksView.Outcome(notice: notice), context: context)
    }

    private static let webhookNotices = [
        "pause": "The endpoint is paused: its events wait.",
        "resume": "The endpoint is active again: its waiting events are being delivered.",
        "test": "A webhook.test event is queued for delivery.",
        "replay": "The dead letter is back in the outbox, and the endpoint is active.",
        "delete": "The endpoint was deleted.",
    ]

    private func webhooksPage(
        _ outcome: WebhooksView.Outcome, context: ServerRequestContext, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let queues = try await store.webhookQueues()
        var endpoints: [WebhooksView.Endpoint] = []
        // A session of a key limited to apps sees their endpoints only, as the key does through the API.
        for endpoint in try await webhooks.list(topic: nil, for: context.caller) {
            let queue = queues[endpoint.id] ?? WebhookQueue()
            let deliveries = try await store.webhookDeliveries(of: endpoint.id, limit: 10).map { delivery in
                WebhooksView.Delivery(
                    at: Self.display(delivery.at), delivered: delivery.delivered, events: delivery.eventCount,
                    status: delivery.statusCode.map(String.init) ?? "—",
                    latency: String(format: "%.1f", WebhookController.milliseconds(delivery.latency)),
                    error: delivery.error ?? "")
            }
            let failing = endpoint.consecutiveFailures > 0
            endpoints.append(
                WebhooksView.Endpoint(
                    id: endpoint.id.uuidString.lowercased(), url: endpoint.url, app: endpoint.app,
                    active: endpoint.status == .active, pending: queue.pending, deadCount: queue.dead,
                    hasDead: queue.dead > 0, failing: failing,
                    events: endpoint.events.map(\.rawValue).joined(separator: ", "), deliveries: deliveries,
                    hasDeliveries: !deliveries.isEmpty, oldest: queue.oldestPendingAt.map(Self.display),
                    pausedReason: endpoint.pausedReason,
                    description: endpoint.description.isEmpty ? nil : endpoint.description,
                    failures: failing ? endpoint.consecutiveFailures : nil,
                    nextAttempt: failing ? Self.display(endpoint.nextAttemptAt) : nil))
        }
        let view = WebhooksView(
            notice: outcome.notice, error: outcome.error, created: outcome.createdSecret.map(WebhooksView.Created.init),
            endpoints: endpoints, hasEndpoints: !endpoints.isEmpty, apps: visibleApps(context),
            eventTypes: WebhookEventType.subscribable.map(\.rawValue))
        return renderer.page(
            "webhooks", title: "Webhooks", section: .webhooks, view: view, context: context, status: status)
    }

    /// webhooks.mustache's values.
    struct WebhooksView: ConsoleView {
        /// What the page says about the change that led to it.
        struct Outcome {
            var notice: String?
            var error: String?
            /// A new endpoint's signing secret, shown once.
            var createdSecret: String?
        }

        struct Created {
            let secret: String
        }

        struct Endpoint {
            let id: String
            let url: String
            let app: String
            let active: Bool
            let pending: Int
            let deadCount: Int
            let hasDead: Bool
            let failing: Bool
            let events: String
            let deliveries: [Delivery]
            let hasDeliveries: Bool
            let oldest: String?
            let pausedReason: String?
            let description: String?
            let failures: Int?
            let nextAttempt: String?
        }

        struct Delivery {
            let at: String
            let delivered: Bool
            let events: Int
            let status: String
            let latency: String
            /// Empty when the delivery failed without one, or succeeded.
            let error: String
        }

        let notice: String?
        let error: String?
        let created: Created?
        let endpoints: [Endpoint]
        let hasEndpoints: Bool
        let apps: [String]
        let eventTypes: [String]
    }

    @Sendable func createWebhook(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        let form = try await ConsoleForm.read(request, session: session)
        do {
            let registration = WebhookEndpoints.Registration(
                topic: form["topic"] ?? visibleApps(context).first,
                url: (form["url"] ?? "").trimmingCharacters(in: .whitespaces),
                events: try WebhookEndpoints.eventTypes(form.all("event")),
                description: (form["description"] ?? "").trimmingCharacters(in: .whitespaces))
            let (_, secret) = try await webhooks.register(registration, by: context.caller)
            return try await webhooksPage(
                WebhooksView.Outcome(createdSecret: secret), context: context, status: .created)
        } catch let error as APIError {
            return try await webhooksPage(
                WebhooksView.Outcome(error: error.message), context: context, status: error.status)
        }
    }

    @Sendable func webhookAction(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError(.notFound, reason: "unknownWebhook", "There is no such webhook endpoint: pick one from the list.")
        }
        let action = context.parameters.get("action") ?? ""
        let caller = context.caller
        switch action {
        case "pause": _ = try await webhooks.change(id, WebhookEndpoints.Change(paused: true), by: caller)
        case "resume": _ = try await webhooks.change(id, WebhookEndpoints.Change(paused: false), by: caller)
        case "test": _ = try await webhooks.sendTestEvent(to: id, by: caller)
        case "replay": _ = try await webhooks.replayDeadLetter(of: id, by: caller)
        case "delete": try await webhooks.delete(id, by: caller)
        default: throw HTTPError(.notFound)
        }
        context.logger.notice("Console: webhook endpoint \(id): \(action)")
        return Self.redirect("/console/webhooks?done=\(action)")
    }
}
