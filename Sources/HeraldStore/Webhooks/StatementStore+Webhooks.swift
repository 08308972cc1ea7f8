package import Foundation
import HeraldCore

extension StatementStore {
    public func webhookEndpoints(app: String?) async throws -> [WebhookEndpoint] {
        try await readRows("list webhook endpoints", StoreSQL.webhookEndpoints(app: app, dialect)).map {
            try $0.webhookEndpoint()
        }
    }

    public func webhookEndpoint(_ id: UUID) async throws -> WebhookEndpoint? {
        try await readRows("read a webhook endpoint", StoreSQL.webhookEndpoint(id, dialect)).first?.webhookEndpoint()
    }

    public func setWebhookEndpoint(_ id: UUID, paused reason: String?) async throws -> WebhookEndpoint? {
        let now = clock.now()
        let statement =
            reason.map { StoreSQL.pauseWebhookEndpoint(id, reason: $0, at: now, dialect) }
            ?? StoreSQL.resumeWebhookEndpoint(id, at: now, dialect)
        return try await writeRows(reason == nil ? "resume a webhook endpoint" : "pause a webhook endpoint", statement)
            .first?.webhookEndpoint()
    }

    public func rotateWebhookSecret(of id: UUID, to secret: String, previousExpiresAt: Date) async throws
        -> WebhookEndpoint?
    {
        let statement = StoreSQL.rotateWebhookSecret(
            id, to: secret, previousExpiresAt: previousExpiresAt, at: clock.now(), dialect)
        return try await writeRows("rotate a webhook secret", statement).first?.webhookEndpoint()
    }

    public func webhookDeliveries(of id: UUID, limit: Int) async throws -> [WebhookDelivery] {
        try await readRows("read webhook deliveries", StoreSQL.webhookDeliveries(of: id, limit: max(1, limit), dialect))
            .map { try $0.webhookDelivery() }
    }

    /// How many dead-letter events were queued again; `nil` when there is no such endpoint (then nothing was).
    public func replayWebhookDeadLetter(of id: UUID) async throws -> Int? {
        let (resumed, replayed) = try await writeRows(
            "replay a webhook dead letter",
            [StoreSQL.resumeWebhookEndpoint(id, at: clock.now(), dialect), StoreSQL.replayWebhookDeadLetter(of: id, dialect)]
        ).pair
        return resumed.isEmpty ? nil : replayed.count
    }

    public func webhookQueues() async throws -> [UUID: WebhookQueue] {
        try StoreSQL.webhookQueues(try await readRows("count waiting webhook events", StoreSQL.webhookQueues(dialect)))
    }

    public func purgeWebhookHistory(before date: Date, limit: Int) async throws -> Int {
        let statements = StoreSQL.purgeWebhookHistory(before: date, limit: limit, dialect)
        guard !statements.isEmpty else { return 0 }
        return try await writeRows("delete delivered webhook events", statements).reduce(0) { $0 + $1.count }
    }
}
