public import Foundation
import GRDB
import HeraldCore
public import HeraldStore

extension SQLiteStore {
    public func createWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint {
        let now = clock.now()
        return try await write("record a webhook endpoint") { db in
            guard let row = try db.rows(StoreSQL.insertWebhookEndpoint(endpoint, at: now, .sqlite)).first else {
                throw StoreError(.invalidRecord, "A webhook endpoint with id \(endpoint.id) exists already.")
            }
            return try row.webhookEndpoint()
        }
    }

    public func webhookEndpoints(app: String?) async throws -> [WebhookEndpoint] {
        try await read("list webhook endpoints") { db in
            try db.rows(StoreSQL.webhookEndpoints(app: app, .sqlite)).map { try $0.webhookEndpoint() }
        }
    }

    public func webhookEndpoint(_ id: UUID) async throws -> WebhookEndpoint? {
        try await read("read a webhook endpoint") { db in
            try db.rows(StoreSQL.webhookEndpoint(id, .sqlite)).first?.webhookEndpoint()
        }
    }

    public func updateWebhookEndpoint(_ id: UUID, _ update: WebhookEndpointUpdate) async throws -> WebhookEndpoint? {
        let now = clock.now()
        return try await write("change a webhook endpoint") { db in
            try db.rows(StoreSQL.updateWebhookEndpoint(id, update, at: now, .sqlite)).first?.webhookEndpoint()
        }
    }

    public func setWebhookEndpoint(_ id: UUID, paused reason: String?) async throws -> WebhookEndpoint? {
        let now = clock.now()
        return try await write(reason == nil ? "resume a webhook endpoint" : "pause a webhook endpoint") { db in
            let statement =
                reason.map { StoreSQL.pauseWebhookEndpoint(id, reason: $0, at: now, .sqlite) }
                ?? StoreSQL.resumeWebhookEndpoint(id, at: now, .sqlite)
            return try db.rows(statement).first?.webhookEndpoint()
        }
    }

    public func deleteWebhookEndpoint(_ id: UUID) async throws -> Bool {
        try await write("delete a webhook endpoint") { db in
            var deleted = false
            for statement in StoreSQL.deleteWebhookEndpoint(id, .sqlite) { deleted = try !db.rows(statement).isEmpty }
            return deleted
        }
    }

    public func rotateWebhookSecret(of id: UUID, to secret: String, previousExpiresAt: Date) async throws
        -> WebhookEndpoint?
    {
        let now = clock.now()
        return try await write("rotate a webhook secret") { db in
            try db.rows(
                StoreSQL.rotateWebhookSecret(id, to: secret, previousExpiresAt: previousExpiresAt, at: now, .sqlite)
            ).first?.webhookEndpoint()
        }
    }

    public func enqueueWebhookEvent(_ draft: WebhookEventDraft, for id: UUID) async throws -> Bool {
        try await write("write a webhook test event") { db in
            guard let endpoint = try db.rows(StoreSQL.webhookEndpoint(id, .sqlite)).first?.webhookEndpoint() else {
                return false
            }
            try db.execute(StoreSQL.insertWebhookEvents([(id.storedText, draft, endpoint.app)], .sqlite))
            return true
        }
    }

    public func claimWebhookBatch(worker: String, leaseUntil: Date, limit: Int) async throws -> WebhookBatch? {
        let now = clock.now()
        // One write: SQLite's single writer makes choosing the endpoint and taking it one step.
        return try await write("claim webhook events") { db in
            try db.webhookBatch(
                claimedBy: StoreSQL.claimWebhookEndpoint(worker: worker, leaseUntil: leaseUntil, at: now, .sqlite),
                at: now, limit: limit)
        }
    }

    public func recordWebhookAttempt(_ attempt: WebhookAttempt) async throws -> Bool {
        let now = clock.now()
        return try await write("record a webhook delivery") { db in try db.recordWebhookAttempt(attempt, at: now) }
    }

    public func recordWebhookDeliveryAndClaimNext(_ attempt: WebhookAttempt, leaseUntil: Date, limit: Int)
        async throws -> WebhookBatch?
    {
        let now = clock.now()
        return try await write("record a webhook delivery and claim the next batch") { db in
            let held = try db.recordWebhookAttempt(attempt, at: now)
            guard held, attempt.outcome == .delivered else { return nil }
            return try db.webhookBatch(
                claimedBy: StoreSQL.reclaimWebhookEndpoint(
                    attempt.endpointID, worker: attempt.worker, leaseUntil: leaseUntil, at: now, .sqlite),
                at: now, limit: limit)
        }
    }

    public func webhookDeliveries(of id: UUID, limit: Int) async throws -> [WebhookDelivery] {
        try await read("read webhook deliveries") { db in
            try db.rows(StoreSQL.webhookDeliveries(of: id, limit: max(1, limit), .sqlite)).map { try $0.webhookDelivery() }
        }
    }

    public func replayWebhookDeadLetter(of id: UUID) async throws -> Int? {
        let now = clock.now()
        return try await write("replay a webhook dead letter") { db in
            guard try db.rows(StoreSQL.resumeWebhookEndpoint(id, at: now, .sqlite)).first != nil else { return nil }
            return try db.rows(StoreSQL.replayWebhookDeadLetter(of: id, .sqlite)).count
        }
    }

    public func webhookQueues() async throws -> [UUID: WebhookQueue] {
        try await read("count waiting webhook events") { db in
            try StoreSQL.webhookQueues(db.rows(StoreSQL.webhookQueues(.sqlite)))
        }
    }

    public func purgeWebhookHistory(before date: Date, limit: Int) async throws -> Int {
        try await write("delete delivered webhook events") { db in
            try StoreSQL.purgeWebhookHistory(before: date, limit: limit, .sqlite).reduce(0) {
                $0 + (try db.rows($1).count)
            }
        }
    }
}

extension Database {
    /// Runs a claim statement and reads the claimed endpoint's waiting events. - Returns: `nil` when it claimed none.
    func webhookBatch(claimedBy claim: SQLStatement, at now: Date, limit: Int) throws -> WebhookBatch? {
        guard let claim = try rows(claim).first?.webhookClaim(at: now) else { return nil }
        let events = try rows(StoreSQL.pendingWebhookEvents(of: claim.endpoint.id, limit: limit, .sqlite)).map {
            try $0.webhookEvent()
        }
        return WebhookBatch(endpoint: claim.endpoint, secrets: claim.secrets, events: events)
    }

    /// Records a webhook attempt in the caller's transaction. - Returns: whether the worker still held the endpoint.
    func recordWebhookAttempt(_ attempt: WebhookAttempt, at now: Date) throws -> Bool {
        let statements = StoreSQL.recordWebhookAttempt(attempt, at: now, .sqlite)
        let held = try !rows(statements.lease).isEmpty
        // Without the lease, the endpoint's state is its new holder's.
        for statement in statements.always + (held ? statements.whenHeld : []) { try execute(statement) }
        return held
    }

    /// Writes the events some endpoint wants to the outbox, in the caller's transaction (``WebhookOutbox``).
    func writeWebhookEvents(_ makeDrafts: @autoclosure () -> [WebhookEventDraft]) throws {
        let subscriptions = try rows(WebhookOutbox.selectSubscriptions(.sqlite))
        // No endpoint: the drafts, a JSON object per outcome, are not even made (2 % of a fan-out's CPU).
        guard !subscriptions.isEmpty else { return }
        let drafts = makeDrafts()
        guard !drafts.isEmpty else { return }
        var outbox = try WebhookOutbox(subscriptions: subscriptions, drafts: drafts, .sqlite)
        while let lookup = outbox.nextLookup() { try outbox.resolve(rows(lookup)) }
        for insert in outbox.inserts() { try execute(insert) }
    }
}
