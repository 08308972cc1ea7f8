package import Foundation
package import HeraldCore

/// The statements of delivery receipts and cancellation, for both backends (see ``StoreSQL``).
extension StoreSQL {
    /// The accepted outcome of a send for a device: rows of (send id, apns-id), the apns-id `NULL` when it is the one
    /// the send derives; none when APNs did not accept one, or retention deleted the send's receipt events (a report
    /// counted again after its event was deleted would count twice).
    package static func acceptedOutcome(of id: SendID, for token: DeviceToken, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            SELECT s.id, o.apns_id FROM \(outcomesByToken(dialect, alias: "o")) JOIN sends s ON s.ref = o.send_ref \
            WHERE \(tokenIs("o.token", hex: "$2", suffixHex: "$3", dialect)) AND o.send_ref = \(sendReference("$1")) \
            AND o.outcome = 'accepted' AND s.receipts_deleted_at IS NULL \
            UNION ALL SELECT s.id, NULL FROM sends s WHERE s.id = $1 AND s.receipts_deleted_at IS NULL \
            AND \(accepted("$4", length: "$5", send: "s.ref", dialect))
            """,
            [
                .text(id.description), .text(token.hex), .text(suffixHex(token)), .bytes(token.bytes),
                .integer(Int64(token.byteCount)),
            ])
    }

    /// The accepted outcome with an `apns-id` for a device, of a send whose receipt events retention has not deleted:
    /// rows of (send id, apns-id): the stored match, then the device's latest ``derivedCandidates`` accepted outcomes
    /// that store no apns-id (the one their send derives, which ``ReceiptRecording`` compares), then as many of the
    /// latest sends of its app (or of none) whose batches hold it (``AcceptedBatch``). Narrowed by the token
    /// first (`send_outcomes_token`), so the cost is the device's own deliveries, whatever the table's size.
    package static func acceptedOutcome(apnsID: APNSID, for token: DeviceToken, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        let byToken = outcomesByToken(dialect, alias: "o")
        let device = """
            \(tokenIs("o.token", hex: "$1", suffixHex: "$4", dialect)) AND o.outcome = 'accepted' \
            AND s.receipts_deleted_at IS NULL
            """
        return SQLStatement(
            dialect,
            """
            SELECT * FROM (SELECT s.id, o.apns_id FROM \(byToken) JOIN sends s ON s.ref = o.send_ref \
            WHERE \(device) AND o.apns_id = $2 ORDER BY o.at DESC LIMIT 1) matched \
            UNION ALL SELECT * FROM (SELECT s.id, o.apns_id FROM \(byToken) JOIN sends s ON s.ref = o.send_ref \
            WHERE \(device) AND o.apns_id IS NULL ORDER BY o.at DESC LIMIT $3) derived \
            UNION ALL SELECT * FROM (SELECT s.id, NULL FROM sends s WHERE s.receipts_deleted_at IS NULL \
            AND (s.topic IS NULL OR s.topic = (SELECT topic FROM devices WHERE token = $1)) \
            AND \(accepted("$5", length: "$6", send: "s.ref", dialect)) ORDER BY s.created_at DESC LIMIT $3) batched
            """,
            [
                .text(token.hex), .text(apnsID.headerValue), .integer(Int64(derivedCandidates)),
                .text(suffixHex(token)), .bytes(token.bytes), .integer(Int64(token.byteCount)),
            ])
    }

    /// How many of a device's latest accepted outcomes under a derived apns-id a receipt that names only its apns-id
    /// is compared with: a device gets far fewer notifications than this within the retention of outcomes.
    package static let derivedCandidates = 1000

    /// Stores one event unless the same (send, device, kind, action) is stored; returns its kind when stored.
    package static func insertReceipt(
        send id: String, token: DeviceToken, kind: ReceiptEvent.Kind, action: String, at date: Date,
        recordedAt now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            INSERT INTO receipt_events (send_id, token, kind, action, at, recorded_at) VALUES ($1, $2, $3, $4, $5, $6) \
            ON CONFLICT (send_id, token, kind, action) DO NOTHING RETURNING kind
            """,
            [
                .text(id), .text(token.hex), .text(kind.rawValue), .text(action),
                .integer(StoreTime.microseconds(date)), .integer(StoreTime.microseconds(now)),
            ])
    }

    /// Adds to a send's receipt counts.
    package static func addReceiptCounts(_ counts: ReceiptCounts, to id: String, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO send_receipts (send_id, received, opened, actions, dismissed) VALUES ($1, $2, $3, $4, $5) \
            ON CONFLICT (send_id) DO UPDATE SET received = send_receipts.received + excluded.received, \
            opened = send_receipts.opened + excluded.opened, actions = send_receipts.actions + excluded.actions, \
            dismissed = send_receipts.dismissed + excluded.dismissed
            """,
            [
                .text(id), .integer(Int64(counts.received)), .integer(Int64(counts.opened)),
                .integer(Int64(counts.actions)), .integer(Int64(counts.dismissed)),
            ])
    }

    /// A send's receipt counts: one row of (received, opened, actions, dismissed), or none.
    package static func receiptCounts(of id: SendID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT received, opened, actions, dismissed FROM send_receipts WHERE send_id = $1",
            [.text(id.description)])
    }

    /// Cancels a queued or running send; returns it, or no row when it is neither. A running send keeps its worker
    /// and lease, so the worker can still record what it has in flight and renew until it stops.
    package static func cancelSend(_ id: SendID, at now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE sends SET status = 'cancelled', updated_at = $2, \
            message = CASE WHEN status = 'queued' THEN $3 ELSE $4 END \
            WHERE id = $1 AND status IN ('queued', 'running') RETURNING \(sendColumns)
            """,
            [
                .text(id.description), .integer(StoreTime.microseconds(now)),
                .text("Cancelled before it started: nothing was sent."),
                .text("Cancelled while sending: the devices counted here were sent, no others will be."),
            ])
    }
}

/// How a batch of receipt events is recorded, as statements each backend runs in one transaction, in order:
/// ``lookups`` (one per event, answered with ``resolve(_:rows:)``), then ``inserts`` (answered with
/// ``inserted(_:row:)``), then ``countUpdates``; ``results`` says what became of each event.
///
/// Inserts and count updates are sorted by key, so two batches that touch the same rows on PostgreSQL take their
/// locks in the same order and cannot deadlock.
package struct ReceiptRecording {
    private let events: [ReceiptEvent]
    private let now: Date
    private let dialect: SQLStatement.Dialect
    /// The send each event resolved to; `nil` for an unknown delivery.
    private var sends: [String?]
    /// Whether each event's own row was stored.
    private var stored: [Bool]
    private var counts: [String: ReceiptCounts] = [:]
    private var plannedInserts: [(event: Int?, send: String, token: DeviceToken, kind: ReceiptEvent.Kind, action: String, at: Date)] = []
    /// The `receipt.*` webhook events of the rows stored, for the outbox in the same transaction.
    package private(set) var webhookDrafts: [WebhookEventDraft] = []

    package init(_ events: [ReceiptEvent], at now: Date, _ dialect: SQLStatement.Dialect) {
        self.events = events
        self.now = now
        self.dialect = dialect
        sends = Array(repeating: nil, count: events.count)
        stored = Array(repeating: false, count: events.count)
    }

    /// One statement per event, finding the accepted outcome it is about.
    package var lookups: [SQLStatement] {
        events.map { event in
            if let sendID = event.sendID { return StoreSQL.acceptedOutcome(of: sendID, for: event.token, dialect) }
            // The server refuses an event with neither; an id that matches nothing is harmless.
            return StoreSQL.acceptedOutcome(apnsID: event.apnsID ?? APNSID(), for: event.token, dialect)
        }
    }

    /// Takes the answer of an event's lookup: the first row whose apns-id (stored, or derived from its send when it
    /// stores none) is the event's, if it names one.
    package mutating func resolve(_ index: Int, rows: [some StoredRow]) throws {
        let event = events[index]
        for row in rows {
            let send = try row.text(0)
            if let apnsID = event.apnsID {
                let matched =
                    try row.optionalText(1).map { $0.lowercased() == apnsID.headerValue }
                    ?? (SendID(send).map { APNSID.derived(send: $0, token: event.token) == apnsID } ?? false)
                guard matched else { continue }
            }
            sends[index] = send
            return
        }
    }

    /// The inserts of the resolved events (and the `received` they imply), sorted by key.
    package mutating func inserts() -> [SQLStatement] {
        plannedInserts = []
        for (index, event) in events.enumerated() {
            guard let send = sends[index] else { continue }
            plannedInserts.append((index, send, event.token, event.kind, event.action ?? "", event.at))
            if event.kind != .received {
                plannedInserts.append((nil, send, event.token, .received, "", event.at))
            }
        }
        // An event reported as such goes before the same row implied by another: it is the one counted recorded.
        plannedInserts.sort { a, b in
            (a.send, a.token.hex, a.kind.rawValue, a.action, a.event == nil ? 1 : 0)
                < (b.send, b.token.hex, b.kind.rawValue, b.action, b.event == nil ? 1 : 0)
        }
        return plannedInserts.map { insert in
            StoreSQL.insertReceipt(
                send: insert.send, token: insert.token, kind: insert.kind, action: insert.action, at: insert.at,
                recordedAt: now, dialect)
        }
    }

    /// Takes the answer of an insert: a row when it stored the event.
    package mutating func inserted(_ index: Int, row: (some StoredRow)?) {
        guard row != nil else { return }
        let insert = plannedInserts[index]
        if let event = insert.event { stored[event] = true }
        counts[insert.send, default: ReceiptCounts()].add(insert.kind)
        if let send = SendID(insert.send) {
            let receipt = ReceiptEvent(
                kind: insert.kind, token: insert.token, sendID: send, action: insert.action, at: insert.at)
            webhookDrafts.append(WebhookEventDraft.event(of: receipt, in: send))
        }
    }

    /// The count updates of the sends that gained events, sorted by send.
    package var countUpdates: [SQLStatement] {
        counts.keys.sorted().map { StoreSQL.addReceiptCounts(counts[$0]!, to: $0, dialect) }
    }

    /// What became of each event, in the order given.
    package var results: [ReceiptResult] {
        events.indices.map { index in
            sends[index] == nil ? .unknownDelivery : stored[index] ? .recorded : .duplicate
        }
    }
}
