import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldWebhooks
import Logging

/// Webhook endpoints as the API (`/api/webhooks…`) and the console's *Webhooks* page manage them: registered for an
/// app, changed, paused and resumed, tested, replayed, their secret rotated, deleted — each for a ``Caller``, with its
/// one access check and its audit entry, so neither door has a copy of the rules (docs/integrations.md).
///
/// Another app's endpoint is as unknown to a caller limited to apps as a missing one: a `403` would tell them that the
/// id exists.
struct WebhookEndpoints: Sendable {
    let store: any Store
    let apps: AppDirectory
    let settings: WebhookSettings
    let clock: any WallClock
    let audit: AuditTrail

    /// An endpoint to register.
    struct Registration: Sendable, Hashable {
        /// The app; `nil`: the server's (or the caller's) only app.
        var topic: String?
        var url: String
        var events: [WebhookEventType]
        var description = ""
    }

    /// A change to an endpoint: what is `nil` stays as it is.
    struct Change: Sendable, Hashable {
        var url: String?
        var events: [WebhookEventType]?
        var description: String?
        var paused: Bool?

        var changesSettings: Bool { url != nil || events != nil || description != nil }
    }

    /// A new secret, with the moment the previous one stops signing.
    struct Rotation: Sendable {
        var endpoint: WebhookEndpoint
        var secret: String
        var previousExpiresAt: Date
    }

    /// Registers an endpoint for an app the caller may act on, and answers its secret (shown once).
    /// - Throws: ``APIError`` `400 invalidField` naming the field, `403 appNotAllowed`, or the app lookup's `400`.
    func register(_ registration: Registration, by caller: Caller) async throws -> (WebhookEndpoint, secret: String) {
        let app = try apps.app(named: registration.topic, for: caller.access).bundleID
        try Self.check(url: registration.url)
        try Self.check(events: registration.events)
        try Self.check(description: registration.description)
        let secret = WebhookSecret.make()
        let endpoint = try await store.createWebhookEndpoint(
            NewWebhookEndpoint(
                app: app, url: registration.url, events: registration.events, description: registration.description,
                secret: secret))
        caller.logger.info("Webhook endpoint \(endpoint.id) registered for \(app)")
        await audit.record(
            .webhookCreated, by: caller, app: app, subject: endpoint.id.lowercasedText,
            detail: WebhookEndpointRules.auditDetail(url: registration.url, events: registration.events))
        return (endpoint, secret)
    }

    /// The endpoints of one app (`nil`: every app) that the caller sees.
    func list(topic: String?, for caller: Caller) async throws -> [WebhookEndpoint] {
        let app = try topic.map { topic throws(APIError) in try apps.app(named: topic, for: caller.access).bundleID }
        return try await store.webhookEndpoints(app: app).filter { caller.access.sees(app: $0.app) }
    }

    /// An endpoint the caller sees.
    /// - Throws: ``APIError`` `404 unknownWebhook`.
    func endpoint(_ id: UUID, for caller: Caller) async throws -> WebhookEndpoint {
        guard let endpoint = try await store.webhookEndpoint(id), caller.access.sees(app: endpoint.app) else {
            throw Self.unknown(id)
        }
        return endpoint
    }

    /// Changes an endpoint's settings, pauses or resumes it.
    /// - Throws: ``APIError`` `400 invalidField` (naming the field, or nothing to change), `404 unknownWebhook`.
    func change(_ id: UUID, _ change: Change, by caller: Caller) async throws -> WebhookEndpoint {
        _ = try await endpoint(id, for: caller)
        guard change.changesSettings || change.paused != nil else {
            throw APIError.invalidField("url", "give at least one of url, events, description, paused")
        }
        if let url = change.url { try Self.check(url: url) }
        if let events = change.events { try Self.check(events: events) }
        if let description = change.description { try Self.check(description: description) }
        var endpoint = try await store.updateWebhookEndpoint(
            id, WebhookEndpointUpdate(url: change.url, events: change.events, description: change.description))
        if let current = endpoint, change.changesSettings {
            await audit.record(
                .webhookChanged, by: caller, app: current.app, subject: id.lowercasedText,
                detail: WebhookEndpointRules.auditDetail(url: current.url, events: current.events))
        }
        if let paused = change.paused, let current = endpoint, paused != (current.status == .paused) {
            endpoint = try await store.setWebhookEndpoint(
                id, paused: paused ? WebhookEndpointRules.pausedByAdministrator : nil)
            if endpoint != nil {
                await audit.record(
                    paused ? .webhookPaused : .webhookResumed, by: caller, app: current.app, subject: id.lowercasedText)
            }
        }
        guard let endpoint else { throw Self.unknown(id) }
        caller.logger.info("Webhook endpoint \(id) changed")
        return endpoint
    }

    /// Deletes an endpoint with its outbox.
    /// - Throws: ``APIError`` `404 unknownWebhook`.
    @discardableResult
    func delete(_ id: UUID, by caller: Caller) async throws -> WebhookEndpoint {
        let deleted = try await endpoint(id, for: caller)
        guard try await store.deleteWebhookEndpoint(id) else { throw Self.unknown(id) }
        caller.logger.info("Webhook endpoint \(id) deleted")
        await audit.record(
            .webhookDeleted, by: caller, app: deleted.app, subject: id.lowercasedText,
            detail: WebhookEndpointRules.auditDetail(url: deleted.url, events: deleted.events))
        return deleted
    }

    /// Makes a new secret; the previous one signs beside it for `overlap` (`nil`: the configured overlap).
    /// - Throws: ``APIError`` `404 unknownWebhook`.
    func rotateSecret(of id: UUID, overlap: Duration?, by caller: Caller) async throws -> Rotation {
        _ = try await endpoint(id, for: caller)
        let secret = WebhookSecret.make()
        let expires = clock.now().addingTimeInterval(Double((overlap ?? settings.secretOverlap).components.seconds))
        guard let endpoint = try await store.rotateWebhookSecret(of: id, to: secret, previousExpiresAt: expires) else {
            throw Self.unknown(id)
        }
        caller.logger.info(
            "Webhook endpoint \(id): secret rotated; the previous one signs until \(RFC3339.string(expires))")
        await audit.record(
            .webhookSecretRotated, by: caller, app: endpoint.app, subject: id.lowercasedText,
            detail: "the previous secret signs until \(RFC3339.string(expires))")
        return Rotation(endpoint: endpoint, secret: secret, previousExpiresAt: expires)
    }

    /// Queues a `webhook.test` event for an endpoint (delivered once it is not paused).
    /// - Throws: ``APIError`` `404 unknownWebhook`.
    func sendTestEvent(to id: UUID, by caller: Caller) async throws -> WebhookEndpoint {
        let endpoint = try await endpoint(id, for: caller)
        _ = try await store.enqueueWebhookEvent(
            WebhookEndpointRules.testEvent(app: endpoint.app, at: clock.now()), for: endpoint.id)
        return endpoint
    }

    /// Sends an endpoint's dead letter again: how many events, and the endpoint after.
    /// - Throws: ``APIError`` `404 unknownWebhook`.
    func replayDeadLetter(of id: UUID, by caller: Caller) async throws -> (count: Int, endpoint: WebhookEndpoint) {
        _ = try await endpoint(id, for: caller)
        guard let count = try await store.replayWebhookDeadLetter(of: id), let endpoint = try await store.webhookEndpoint(id)
        else { throw Self.unknown(id) }
        caller.logger.info("Webhook endpoint \(id): \(count) dead-letter events replayed")
        await audit.record(
            .webhookReplayed, by: caller, app: endpoint.app, subject: id.lowercasedText,
            detail: "\(count) dead-letter events")
        return (count, endpoint)
    }

    static func unknown(_ id: UUID) -> APIError {
        APIError(.notFound, reason: "unknownWebhook", "There is no webhook endpoint \(id.uuidString.lowercased()).")
    }

    /// - Throws: ``APIError`` `400 invalidField` naming `url`.
    static func check(url: String) throws(APIError) {
        if let problem = WebhookEndpointRules.problem(withURL: url) { throw APIError.invalidField("url", problem) }
    }

    /// - Throws: ``APIError`` `400 invalidField` naming `events`.
    static func check(events: [WebhookEventType]) throws(APIError) {
        guard !events.isEmpty else { throw APIError.invalidField("events", "name at least one event type") }
    }

    /// - Throws: ``APIError`` `400 invalidField` naming `description`.
    static func check(description: String) throws(APIError) {
        if let problem = WebhookEndpointRules.problem(withDescription: description) {
            throw APIError.invalidField("description", problem)
        }
    }

    /// Event types by their names.
    /// - Throws: ``APIError`` `400 invalidField` naming `events`.
    static func eventTypes(_ names: [String]) throws(APIError) -> [WebhookEventType] {
        do {
            return try WebhookEndpointRules.eventTypes(names)
        } catch {
            throw APIError.invalidField("events", error.description)
        }
    }
}

// MARK: - The API's bodies

extension WebhookEndpoints.Registration {
    /// Decodes `POST /api/webhooks`'s fields.
    /// - Throws: ``APIError`` `400 invalidField` naming the field.
    init(json fields: JSONFields) throws(APIError) {
        guard let url = try fields.string("url") else { throw APIError.invalidField("url", "it is required") }
        guard fields["events"] != nil else {
            throw APIError.invalidField(
                "events",
                "it is required: a list of \(WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", "))")
        }
        self.init(
            topic: try fields.string("topic"), url: url, events: try Self.events(fields),
            description: try fields.string("description") ?? "")
    }

    /// A body's `events`.
    static func events(_ fields: JSONFields) throws(APIError) -> [WebhookEventType] {
        try WebhookEndpoints.eventTypes(
            try fields.strings("events", maximumCount: WebhookEventType.allCases.count))
    }
}

extension WebhookEndpoints.Change {
    /// Decodes `PATCH /api/webhooks/{id}`'s fields.
    /// - Throws: ``APIError`` `400 invalidField` naming the field.
    init(json fields: JSONFields) throws(APIError) {
        self.init(
            url: try fields.string("url"),
            events: fields["events"] == nil ? nil : try WebhookEndpoints.Registration.events(fields),
            description: try fields.string("description"), paused: try fields.bool("paused"))
    }
}
