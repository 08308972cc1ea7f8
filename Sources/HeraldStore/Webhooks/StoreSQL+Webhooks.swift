package import Foundation
import HeraldCore

extension StoreSQL {
    /// The columns ``StoredRow/webhookEndpoint()`` reads, in its order.
    package static let webhookEndpointColumns = """
        id, app, url, events, description, status, paused_reason, paused_at, consecutive_failures, first_failure_at, \
        next_attempt_at, created_at, updated_at, previous_secret_expires_at
        """

    /// Event types as stored: comma-separated, sorted.
    package static func webhookEventList(_ types: [WebhookEventType]) -> String {
        Set(types).sorted().map(\.rawValue).joined(separator: ",")
    }

    /// Event types from their stored list; names this build does not know are left out.
    package static func webhookEventTypes(_ list: String) -> Set<WebhookEventType> {
        Set(list.split(separator: ",").compactMap { WebhookEventType(rawValue: String($0)) })
    }

    package static func insertWebhookEndpoint(_ endpoint: NewWebhookEndpoint, at now: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO webhook_endpoints (id, app, url, events, description, secret, status, consecutive_failures, \
            next_attempt_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'active', 0, $7, $7, $7) \
            ON CONFLICT (id) DO NOTHING RETURNING \(webhookEndpointColumns)
            """,
            [
                .text(endpoint.id.uuidString.lowercased()), .text(endpoint.app), .text(endpoint.url),
                .text(webhookEventList(endpoint.events)), .text(endpoint.description), .text(endpoint.secret),
                .integer(StoreTime.microseconds(now)),
            ])
    }

    package static func webhookEndpoints(app: String?, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        guard let app else {
            return SQLStatement(dialect, "SELECT \(webhookEndpointColumns) FROM webhook_endpoints ORDER BY created_at, id")
        }
        return SQLStatement(
            dialect, "SELECT \(webhookEndpointColumns) FROM webhook_endpoints WHERE app = $1 ORDER BY created_at, id",
            [.text(app)])
    }

    package static func webhookEndpoint(_ id: UUID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT \(webhookEndpointColumns) FROM webhook_endpoints WHERE id = $1", [.text(id.storedText)])
    }

    package static func updateWebhookEndpoint(
        _ id: UUID, _ update: WebhookEndpointUpdate, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE webhook_endpoints SET url = coalesce($2, url), events = coalesce($3, events), \
            description = coalesce($4, description), updated_at = $5 WHERE id = $1 RETURNING \(webhookEndpointColumns)
            """,
            [
                .text(id.storedText), .textOrNull(update.url), .textOrNull(update.events.map(webhookEventList)),
                .textOrNull(update.description), .integer(StoreTime.microseconds(now)),
            ])
    }

    package static func pauseWebhookEndpoint(
        _ id: UUID, reason: String, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE webhook_endpoints SET status = 'paused', paused_reason = $2, paused_at = $3, updated_at = $3 \
            WHERE id = $1 RETURNING \(webhookEndpointColumns)
            """, [.text(id.storedText), .text(reason), .integer(StoreTime.microseconds(now))])
    }

    package static func resumeWebhookEndpoint(_ id: UUID, at now: Date, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            UPDATE webhook_endpoints SET status = 'active', paused_reason = NULL, paused_at = NULL, \
            consecutive_failures = 0, first_failure_at = NULL, next_attempt_at = $2, updated_at = $2 \
            WHERE id = $1 RETURNING \(webhookEndpointColumns)
            """, [.text(id.storedText), .integer(StoreTime.microseconds(now))])
    }

    /// The deletes of an endpoint, its outbox and deliveries; the last returns a row when the endpoint existed.
    package static func deleteWebhookEndpoint(_ id: UUID, _ dialect: SQLStatement.Dialect) -> [SQLStatement] {
        [
            SQLStatement(dialect, "DELETE FROM webhook_events WHERE endpoint_id = $1", [.text(id.storedText)]),
            SQLStatement(dialect, "DELETE FROM webhook_deliveries WHERE endpoint_id = $1", [.text(id.storedText)]),
            SQLStatement(dialect, "DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id", [.text(id.storedText)]),
        ]
    }

    package static func rotateWebhookSecret(
        _ id: UUID, to secret: String, previousExpiresAt: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $3, secret = $2, \
            updated_at = $4 WHERE id = $1 RETURNING \(webhookEndpointColumns)
            """,
            [
                .text(id.storedText), .text(secret), .integer(StoreTime.microseconds(previousExpiresAt)),
                .integer(StoreTime.microseconds(now)),
            ])
    }

    /// Events for the outbox: (endpoint id, draft, app) each.
    package static func insertWebhookEvents(
        _ rows: [(endpoint: String, draft: WebhookEventDraft, app: String)], _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let values = rows.map { row in
            let binds = [
                statement.bind(row.endpoint), statement.bind(row.draft.type.rawValue), statement.bind(row.app),
                statement.bind(.textOrNull(row.draft.sendID?.description)), statement.bind(String(decoding: row.draft.data.sortedJSONBytes, as: UTF8.self)),
                statement.bind(.integer(StoreTime.microseconds(row.draft.at))),
            ]
            return "(\(binds.joined(separator: ", ")), 'pending', 0)"
        }
        statement.sql = """
            INSERT INTO webhook_events (endpoint_id, type, app, send_id, data, created_at, status, attempts) \
            VALUES \(values.joined(separator: ", "))
            """
        return statement
    }

    /// Gives `worker` the lease of the active endpoint that is due and has waited longest, with its secrets
    /// (columns after the endpoint's: secret, previous secret).
    package static func claimWebhookEndpoint(
        worker: String, leaseUntil: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE webhook_endpoints SET lease_owner = $1, lease_until = $2 WHERE id = (SELECT e.id \
            FROM webhook_endpoints e WHERE e.status = 'active' AND e.next_attempt_at <= $3 \
            AND (e.lease_until IS NULL OR e.lease_until <= $3) \
            AND EXISTS (SELECT 1 FROM webhook_events v WHERE v.endpoint_id = e.id AND v.status = 'pending') \
            ORDER BY e.next_attempt_at, e.id LIMIT 1\(dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : "")) \
            RETURNING \(webhookEndpointColumns), secret, previous_secret
            """,
            [.text(worker), .integer(StoreTime.microseconds(leaseUntil)), .integer(StoreTime.microseconds(now))])
    }

    /// Takes one endpoint again for `worker`, in the transaction that released it after a delivery: only while it is
    /// active, due and unleased, and something waits. Returns what ``claimWebhookEndpoint(worker:leaseUntil:at:_:)``
    /// returns.
    package static func reclaimWebhookEndpoint(
        _ id: UUID, worker: String, leaseUntil: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE webhook_endpoints SET lease_owner = $1, lease_until = $2 WHERE id = $4 AND status = 'active'             AND next_attempt_at <= $3 AND lease_owner IS NULL             AND EXISTS (SELECT 1 FROM webhook_events v WHERE v.endpoint_id = $4 AND v.status = 'pending')             RETURNING \(webhookEndpointColumns), secret, previous_secret
            """,
            [
                .text(worker), .integer(StoreTime.microseconds(leaseUntil)), .integer(StoreTime.microseconds(now)),
                .text(id.storedText),
            ])
    }

    package static func pendingWebhookEvents(of id: UUID, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            SELECT id, type, app, send_id, data, created_at, attempts FROM webhook_events \
            WHERE endpoint_id = $1 AND status = 'pending' ORDER BY id LIMIT $2
            """, [.text(id.storedText), .integer(Int64(limit))])
    }

    /// The statements that record an attempt: `lease` first, which returns a row when the worker held the endpoint
    /// (and updates it then); `always`, the events' marks and the delivery's row; `whenHeld`, what only the lease's
    /// holder may do (move the waiting events to the dead letter).
    package static func recordWebhookAttempt(_ attempt: WebhookAttempt, at now: Date, _ dialect: SQLStatement.Dialect)
        -> (lease: SQLStatement, always: [SQLStatement], whenHeld: [SQLStatement])
    {
        let id = SQLStatement.Value.text(attempt.endpointID.storedText)
        let nowValue = SQLStatement.Value.integer(StoreTime.microseconds(now))
        let worker = SQLStatement.Value.text(attempt.worker)
        var marks = SQLStatement(dialect)
        let endpointBind = marks.bind(id)
        let list = attempt.eventIDs.map { marks.bind(.integer($0)) }.joined(separator: ", ")
        let lease: SQLStatement
        var whenHeld: [SQLStatement] = []
        switch attempt.outcome {
        case .delivered:
            lease = SQLStatement(
                dialect,
                """
                UPDATE webhook_endpoints SET consecutive_failures = 0, first_failure_at = NULL, \
                next_attempt_at = $3, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2 \
                RETURNING id
                """, [id, worker, nowValue])
            let delivered = marks.bind(nowValue)
            marks.sql = """
                UPDATE webhook_events SET status = 'delivered', delivered_at = \(delivered), attempts = attempts + 1 \
                WHERE endpoint_id = \(endpointBind) AND id IN (\(list)) AND status = 'pending'
                """
        case .retry(let at):
            lease = SQLStatement(
                dialect,
                """
                UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, \
                first_failure_at = coalesce(first_failure_at, $3), next_attempt_at = $4, lease_owner = NULL, \
                lease_until = NULL WHERE id = $1 AND lease_owner = $2 RETURNING id
                """, [id, worker, nowValue, .integer(StoreTime.microseconds(at))])
            marks.sql = """
                UPDATE webhook_events SET attempts = attempts + 1 WHERE endpoint_id = \(endpointBind) \
                AND id IN (\(list)) AND status = 'pending'
                """
        case .pause(let reason):
            lease = SQLStatement(
                dialect,
                """
                UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, \
                first_failure_at = coalesce(first_failure_at, $3), status = 'paused', paused_reason = $4, \
                paused_at = $3, updated_at = $3, lease_owner = NULL, lease_until = NULL \
                WHERE id = $1 AND lease_owner = $2 RETURNING id
                """, [id, worker, nowValue, .text(reason)])
            marks.sql = """
                UPDATE webhook_events SET attempts = attempts + 1 WHERE endpoint_id = \(endpointBind) \
                AND id IN (\(list)) AND status = 'pending'
                """
            whenHeld.append(
                SQLStatement(
                    dialect, "UPDATE webhook_events SET status = 'dead' WHERE endpoint_id = $1 AND status = 'pending'",
                    [id]))
        }
        let delivery = SQLStatement(
            dialect,
            """
            INSERT INTO webhook_deliveries (endpoint_id, at, event_count, status_code, error, latency_us, \
            delivered, worker) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [
                id, .integer(StoreTime.microseconds(attempt.startedAt)), .integer(Int64(attempt.eventIDs.count)),
                .integerOrNull(attempt.statusCode.map(Int64.init)), .textOrNull(attempt.error),
                .integer(attempt.latency.microseconds), .integer(attempt.outcome == .delivered ? 1 : 0), worker,
            ])
        return (lease, (attempt.eventIDs.isEmpty ? [] : [marks]) + [delivery], whenHeld)
    }

    package static func webhookDeliveries(of id: UUID, limit: Int, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT id, endpoint_id, at, event_count, status_code, error, latency_us, delivered FROM webhook_deliveries \
            WHERE endpoint_id = $1 ORDER BY id DESC LIMIT $2
            """, [.text(id.storedText), .integer(Int64(limit))])
    }

    /// Returns a row per event moved back.
    package static func replayWebhookDeadLetter(of id: UUID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "UPDATE webhook_events SET status = 'pending' WHERE endpoint_id = $1 AND status = 'dead' RETURNING id",
            [.text(id.storedText)])
    }

    /// Per endpoint and status (pending, dead): count and oldest write.
    package static func webhookQueues(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT endpoint_id, status, count(*), min(created_at) FROM webhook_events \
            WHERE status IN ('pending', 'dead') GROUP BY endpoint_id, status
            """)
    }

    package static func webhookQueues(_ rows: [any StoredRow]) throws -> [UUID: WebhookQueue] {
        var queues: [UUID: WebhookQueue] = [:]
        for row in rows {
            guard let id = UUID(uuidString: try row.text(0)) else { continue }
            let count = Int(try row.integer(2))
            if try row.text(1) == "dead" {
                queues[id, default: WebhookQueue()].dead = count
            } else {
                queues[id, default: WebhookQueue()].pending = count
                queues[id, default: WebhookQueue()].oldestPendingAt = try row.optionalInteger(3).map(StoreTime.date)
            }
        }
        return queues
    }

    /// Three deletes (delivered events, deliveries, events of deleted endpoints), each of up to `limit` rows, each returning a row per row deleted. The newest event always stays:
    /// SQLite numbers a new row after the highest one left, and an id a receiver has seen must never come again.
    package static func purgeWebhookHistory(before date: Date, limit: Int, _ dialect: SQLStatement.Dialect)
        -> [SQLStatement]
    {
        let binds: [SQLStatement.Value] = [.integer(StoreTime.microseconds(date)), .integer(Int64(limit))]
        return [
            SQLStatement(
                dialect,
                """
                DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events WHERE status = 'delivered' \
                AND delivered_at < $1 AND id < (SELECT max(id) FROM webhook_events) ORDER BY delivered_at LIMIT $2) \
                RETURNING id
                """, binds),
            SQLStatement(
                dialect,
                """
                DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE at < $1 \
                ORDER BY at LIMIT $2) RETURNING id
                """, binds),
            // Events written for an endpoint deleted meanwhile.
            SQLStatement(
                dialect,
                """
                DELETE FROM webhook_events WHERE id IN (SELECT v.id FROM webhook_events v WHERE v.created_at < $1 \
                AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = v.endpoint_id) LIMIT $2) RETURNING id
                """, binds),
        ]
    }
}

extension UUID {
    /// How ids are stored: lowercase text.
    package var storedText: String { uuidString.lowercased() }
}

extension Duration {
    fileprivate var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
}

extension StoredRow {
    /// An endpoint from ``StoreSQL/webhookEndpointColumns``.
    package func webhookEndpoint() throws -> WebhookEndpoint {
        guard let id = UUID(uuidString: try text(0)), let status = WebhookEndpoint.Status(rawValue: try text(5)) else {
            throw StoreError(.corruptRecord, "A stored webhook endpoint has an unreadable id or status.")
        }
        return WebhookEndpoint(
            id: id, app: try text(1), url: try text(2), events: StoreSQL.webhookEventTypes(try text(3)).sorted(),
            description: try text(4), status: status, pausedReason: try optionalText(6),
            pausedAt: try optionalInteger(7).map(StoreTime.date), consecutiveFailures: Int(try integer(8)),
            firstFailureAt: try optionalInteger(9).map(StoreTime.date), nextAttemptAt: StoreTime.date(try integer(10)),
            createdAt: StoreTime.date(try integer(11)), updatedAt: StoreTime.date(try integer(12)),
            previousSecretExpiresAt: try optionalInteger(13).map(StoreTime.date))
    }

    /// A claimed batch's endpoint and secrets: the previous secret only while its overlap lasts.
    package func webhookClaim(at now: Date) throws -> (endpoint: WebhookEndpoint, secrets: [String]) {
        let endpoint = try webhookEndpoint()
        var secrets = [try text(14)]
        if let previous = try optionalText(15), let until = endpoint.previousSecretExpiresAt, until > now {
            secrets.append(previous)
        }
        return (endpoint, secrets)
    }

    /// An outbox event: id, type, app, send id, data, created at, attempts.
    package func webhookEvent() throws -> WebhookEvent {
        guard let type = WebhookEventType(rawValue: try text(1)) else {
            throw StoreError(.corruptRecord, "A stored webhook event has an unknown type.")
        }
        return WebhookEvent(
            id: try integer(0), type: type, app: try text(2), sendID: try optionalText(3).flatMap(SendID.init),
            data: try text(4), createdAt: StoreTime.date(try integer(5)), attempts: Int(try integer(6)))
    }

    package func webhookDelivery() throws -> WebhookDelivery {
        guard let endpoint = UUID(uuidString: try text(1)) else {
            throw StoreError(.corruptRecord, "A stored webhook delivery has an unreadable endpoint id.")
        }
        return WebhookDelivery(
            id: try integer(0), endpointID: endpoint, at: StoreTime.date(try integer(2)),
            eventCount: Int(try integer(3)), statusCode: try optionalInteger(4).map(Int.init),
            error: try optionalText(5), latency: .microseconds(try integer(6)), delivered: try integer(7) != 0)
    }
}
