public import Foundation
public import HeraldCore
public import HeraldStore
public import Logging

/// What `herald keys`, `herald webhooks` and `herald tokens add|remove` change, through the use cases the API and the
/// console call: the same rules, the same checks against the apps the server serves, the same audit entries, whichever
/// door (docs/security.md). The command line acts without limits, as an admin key without apps would, and the audit
/// log names it `herald CLI (<user>)`.
///
/// Every method throws ``APIError`` for what the API would refuse (its `message` says what to do), and the store's
/// errors for the database's faults.
public struct CommandLineAdministration: Sendable {
    private let apiKeys: APIKeys
    private let endpoints: WebhookEndpoints
    private let devices: Devices
    private let store: any Store
    private let apps: AppDirectory
    private let caller: Caller

    /// - Parameters:
    ///   - configuration: The server's configuration: the apps it serves, the webhooks' settings.
    ///   - user: Who runs the command, for the audit log (the `USER` variable).
    public init(
        configuration: ServerConfiguration, store: any Store, user: String, logger: Logger,
        clock: any WallClock = SystemWallClock()
    ) {
        let apps = AppDirectory(configuration.apps, pushServices: configuration.webPushHosts)
        self.apps = apps
        self.store = store
        let audit = AuditTrail(store: store, clock: clock)
        apiKeys = APIKeys(
            store: store, apps: apps, verifier: APIKeyVerifier(store: store, clock: clock), clock: clock, audit: audit)
        endpoints = WebhookEndpoints(
            store: store, apps: apps, settings: configuration.webhooks, clock: clock, audit: audit)
        devices = Devices(store: store, apps: apps, audit: audit)
        caller = Caller(
            access: KeyAccess(key: nil), actor: AuditActor(kind: .cli, keyID: nil, name: "herald CLI (\(user))"),
            address: nil, logger: logger)
    }

    // MARK: API keys

    /// Makes a key and answers its secret (shown once).
    /// - Parameters:
    ///   - apps: The bundle ids it is limited to (apps the server serves); empty: every app.
    ///   - environment: `production` or `development`; `nil`: both.
    ///   - expires: `90d`, `12h`, `30m` from now, or an RFC 3339 instant; `nil`: never.
    public func createKey(
        name: String, scopes: Set<APIKeyScope>, apps: [String], environment: String?, expires: String?
    ) async throws -> CreatedAPIKey {
        try await apiKeys.create(
            APIKeys.Creation(name: name, scopes: scopes, apps: apps, environment: environment, expires: expires),
            by: caller)
    }

    /// Every key, oldest first.
    public func keys() async throws -> [APIKey] { try await apiKeys.list(for: caller) }

    /// Revokes a key; revoking a revoked key changes nothing. A running server trusts a key it verified for a few
    /// seconds more (``APIKeyVerifier``'s lifetime).
    public func revokeKey(_ id: UUID) async throws -> APIKey { try await apiKeys.revoke(id, by: caller) }

    // MARK: Webhook endpoints

    /// Registers an endpoint and answers it with its signing secret (shown once).
    public func registerWebhook(topic: String?, url: String, events: [String], description: String) async throws
        -> (endpoint: WebhookEndpoint, secret: String)
    {
        let events = try WebhookEndpoints.eventTypes(events)
        let (endpoint, secret) = try await endpoints.register(
            WebhookEndpoints.Registration(topic: topic, url: url, events: events, description: description),
            by: caller)
        return (endpoint, secret)
    }

    /// The endpoints of one app (`nil`: every app).
    public func webhooks(topic: String?) async throws -> [WebhookEndpoint] {
        try await endpoints.list(topic: topic, for: caller)
    }

    /// One endpoint.
    public func webhook(_ id: UUID) async throws -> WebhookEndpoint { try await endpoints.endpoint(id, for: caller) }

    /// Each endpoint's queue: its pending events and its dead letter.
    public func webhookQueues() async throws -> [UUID: WebhookQueue] { try await store.webhookQueues() }

    /// An endpoint's latest deliveries, newest first.
    public func webhookDeliveries(of id: UUID, limit: Int) async throws -> [WebhookDelivery] {
        _ = try await endpoints.endpoint(id, for: caller)
        return try await store.webhookDeliveries(of: id, limit: limit)
    }

    /// Pauses an endpoint (its events wait) or resumes it (its failures forgotten).
    public func setWebhook(_ id: UUID, paused: Bool) async throws -> WebhookEndpoint {
        try await endpoints.change(id, WebhookEndpoints.Change(paused: paused), by: caller)
    }

    /// Makes a new signing secret; the previous one signs beside it for `overlap`.
    public func rotateWebhookSecret(of id: UUID, overlap: Duration?) async throws
        -> (secret: String, previousExpiresAt: Date)
    {
        let rotation = try await endpoints.rotateSecret(of: id, overlap: overlap, by: caller)
        return (rotation.secret, rotation.previousExpiresAt)
    }

    /// Queues a `webhook.test` event for an endpoint.
    public func sendTestEvent(to id: UUID) async throws { _ = try await endpoints.sendTestEvent(to: id, by: caller) }

    /// Sends an endpoint's dead letter again: how many events.
    public func replayDeadLetter(of id: UUID) async throws -> Int {
        try await endpoints.replayDeadLetter(of: id, by: caller).count
    }

    /// Deletes an endpoint with its outbox and deliveries.
    public func deleteWebhook(_ id: UUID) async throws { try await endpoints.delete(id, by: caller) }

    // MARK: Devices

    /// Registers a device token for an app the server serves, as the app's `POST /api/token` would store it.
    /// - Parameter topic: The app's bundle id; `nil`: the server's only app.
    public func registerDevice(
        _ token: DeviceToken, topic: String?, environment: APNSEnvironment, kind: TokenKind, userID: String?,
        languages: [String], tags: [String]
    ) async throws -> UpsertResult {
        let app = try apps.app(named: topic, for: caller.access).bundleID
        return try await devices.register(
            TokenRegistration(
                token: token, topic: app, environment: environment, tokenKind: kind, userID: userID,
                preferredLanguages: languages, tags: tags),
            by: caller)
    }

    /// Removes a registered device: it gets no more notifications.
    /// - Returns: The device as it was.
    public func removeDevice(_ token: DeviceToken) async throws -> DeviceRegistration {
        try await devices.remove(token, by: caller)
    }
}
