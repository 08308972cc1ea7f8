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

    public func updateWebhookEndpoint(_ id: UUID, _ update: WebhookEndpointUpdate) async throws -> WebhookEndpoint? {
        let now = clock.now()
        return try await write("change a webhook endpoint") { db in
            try db.rows(StoreSQL.updateWebhookEndpoint(id, update, at: now, .sqlite)).first?.webhookEndpoint()
        }
    }

    public func deleteWebhookEndpoint(_ id: UUID) async throws -> Bool {
        try await write("delete a webhook endpoint") { db in
            var deleted = false
            for statement in StoreSQL.deleteWebhookEndpoint(id, .sqlite) { deleted = try !db.rows(statement).isEmpty }
            return deleted
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
