public import Foundation
import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    public func createWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint {
        defer { webhookSubscriptions.forget() }
        let now = clock.now()
        return try await transaction("record a webhook endpoint") { session in
            guard let row = try await session.rows(StoreSQL.insertWebhookEndpoint(endpoint, at: now, .postgres)).first
            else { throw StoreError(.invalidRecord, "A webhook endpoint with id \(endpoint.id) exists already.") }
            return try row.webhookEndpoint()
        }
    }

    public func updateWebhookEndpoint(_ id: UUID, _ update: WebhookEndpointUpdate) async throws -> WebhookEndpoint? {
        defer { webhookSubscriptions.forget() }
        let now = clock.now()
        return try await transaction("change a webhook endpoint") { session in
            try await session.rows(StoreSQL.updateWebhookEndpoint(id, update, at: now, .postgres)).first?
                .webhookEndpoint()
        }
    }

    public func deleteWebhookEndpoint(_ id: UUID) async throws -> Bool {
        defer { webhookSubscriptions.forget() }
        return try await transaction("delete a webhook endpoint") { session in
            var deleted = false
            for statement in StoreSQL.deleteWebhookEndpoint(id, .postgres) {
                deleted = try await !session.rows(statement).isEmpty
            }
            return deleted
        }
    }

    public func enqueueWebhookEvent(_ draft: WebhookEventDraft, for id: UUID) async throws -> Bool {
        try await transaction("write a webhook test event") { session in
            guard let endpoint = try await session.rows(StoreSQL.webhookEndpoint(id, .postgres)).first?.webhookEndpoint()
            else { return false }
            try await session.execute(StoreSQL.insertWebhookEvents([(id.storedText, draft, endpoint.app)], .postgres))
            return true
        }
    }

    public func claimWebhookBatch(worker: String, leaseUntil: Date, limit: Int) async throws -> WebhookBatch? {
        let now = clock.now()
        // The claim commits on its own (FOR UPDATE SKIP LOCKED: instances never wait on each other's claims); the
        // lease then keeps the endpoint this worker's while it reads and posts.
        return try await session("claim webhook events") { session in
            try await Self.batch(
                claimedBy: StoreSQL.claimWebhookEndpoint(worker: worker, leaseUntil: leaseUntil, at: now, .postgres),
                at: now, limit: limit, in: session)
        }
    }

    /// Runs a claim statement and reads the claimed endpoint's waiting events. - Returns: `nil` when it claimed none.
    private static func batch(claimedBy claim: SQLStatement, at now: Date, limit: Int, in session: Session)
        async throws -> WebhookBatch?
    {
        guard let claim = try await session.rows(claim).first?.webhookClaim(at: now) else { return nil }
        let events = try await session.rows(
            StoreSQL.pendingWebhookEvents(of: claim.endpoint.id, limit: limit, .postgres)
        ).map { try $0.webhookEvent() }
        return WebhookBatch(endpoint: claim.endpoint, secrets: claim.secrets, events: events)
    }

    public func recordWebhookAttempt(_ attempt: WebhookAttempt) async throws -> Bool {
        let now = clock.now()
        return try await transaction("record a webhook delivery") { session in
            try await Self.record(attempt, at: now, in: session)
        }
    }

    /// Records an attempt in a transaction. - Returns: whether the worker still held the endpoint.
    private static func record(_ attempt: WebhookAttempt, at now: Date, in session: Session) async throws -> Bool {
        let statements = StoreSQL.recordWebhookAttempt(attempt, at: now, .postgres)
        let held = try await !session.rows(statements.lease).isEmpty
        // Without the lease, the endpoint's state is its new holder's.
        for statement in statements.always + (held ? statements.whenHeld : []) {
            try await session.execute(statement)
        }
        return held
    }

    public func recordWebhookDeliveryAndClaimNext(_ attempt: WebhookAttempt, leaseUntil: Date, limit: Int)
        async throws -> WebhookBatch?
    {
        let now = clock.now()
        return try await transaction("record a webhook delivery and claim the next batch") { session in
            let held = try await Self.record(attempt, at: now, in: session)
            // The lease statement locked the endpoint's row: no other deliverer can take it in between.
            guard held, attempt.outcome == .delivered else { return nil }
            return try await Self.batch(
                claimedBy: StoreSQL.reclaimWebhookEndpoint(
                    attempt.endpointID, worker: attempt.worker, leaseUntil: leaseUntil, at: now, .postgres),
                at: now, limit: limit, in: session)
        }
    }

    /// Runs `body` in a transaction that also writes to the outbox the events `body` returns that some endpoint wants
    /// (``Session/writeWebhookEvents(_:)``, which reads the endpoints only when its cache cannot answer).
    func withWebhookEvents<T: Sendable>(
        _ action: String,
        _ body: @escaping @Sendable (Session) async throws -> (T, [WebhookEventDraft])
    ) async throws -> T {
        // In a transaction even without events: only a COMMIT's answer says the write is stored (postgres-nio answers
        // a lone statement before its implicit commit).
        try await transaction(action) { session in
            let (value, drafts) = try await body(session)
            try await session.writeWebhookEvents(drafts)
            return value
        }
    }
}

extension PostgresStore.Session {
    /// Writes the events some endpoint wants to the outbox, in the caller's transaction (``WebhookOutbox``). When a
    /// read of the endpoints at most a second old found none that wants these events' types, the endpoints are not
    /// read again (``WebhookSubscriptionCache``): a fan-out records its outcomes hundreds of times a second. When it
    /// found no endpoint at all, the drafts, a JSON object per outcome, are not even made (2 % of a fan-out's CPU).
    func writeWebhookEvents(_ makeDrafts: @autoclosure () -> [WebhookEventDraft]) async throws {
        let now = clock.now()
        if webhookSubscriptions.noneWants(Set(WebhookEventType.allCases), at: now) == true { return }
        let drafts = makeDrafts()
        guard !drafts.isEmpty else { return }
        if webhookSubscriptions.noneWants(Set(drafts.map(\.type)), at: now) == true { return }
        let read = webhookSubscriptions.startRead(at: now)
        let subscriptions = try await rows(WebhookOutbox.selectSubscriptions(.postgres))
        webhookSubscriptions.remember(try WebhookOutbox.wantedTypes(subscriptions), from: read)
        var outbox = try WebhookOutbox(subscriptions: subscriptions, drafts: drafts, .postgres)
        while let lookup = outbox.nextLookup() { try outbox.resolve(await rows(lookup)) }
        for insert in outbox.inserts() { try await execute(insert) }
    }
}
