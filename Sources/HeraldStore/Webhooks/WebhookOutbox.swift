import Foundation
import HeraldCore

/// Writes events to the outbox of the endpoints that want them, inside the caller's transaction: each backend runs
/// the statements this hands out, in order, on its transaction.
///
/// ```swift
/// var outbox = try WebhookOutbox(subscriptions: rows(WebhookOutbox.selectSubscriptions(dialect)), drafts: drafts)
/// while let lookup = outbox.nextLookup() { try outbox.resolve(rows(lookup)) }
/// for insert in outbox.inserts() { try execute(insert) }
/// ```
///
/// Costs one read of the (small) endpoint table when no endpoint wants the drafts; then one read of the devices'
/// topics, one probe per ended send and app, and an insert per 100 events.
package struct WebhookOutbox {
    private struct Subscription {
        let id: String
        let app: String
        let events: Set<WebhookEventType>
    }

    private enum Lookup {
        case topics(SQLStatement)
        case sendApp(draft: Int, app: String, SQLStatement)
    }

    private let dialect: SQLStatement.Dialect
    private let subscriptions: [Subscription]
    private let drafts: [WebhookEventDraft]
    private var topics: [String: String] = [:]
    private var apps: [Int: [String]] = [:]
    private var lookups: [Lookup] = []
    private var current: Lookup?

    /// The endpoints' ids, apps and subscriptions.
    package static func selectSubscriptions(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "SELECT id, app, events FROM webhook_endpoints")
    }

    package init(subscriptions rows: [any StoredRow], drafts: [WebhookEventDraft], _ dialect: SQLStatement.Dialect)
        throws
    {
        self.dialect = dialect
        subscriptions = try rows.map {
            Subscription(id: try $0.text(0), app: try $0.text(1), events: StoreSQL.webhookEventTypes(try $0.text(2)))
        }
        let wantedTypes = subscriptions.reduce(into: Set<WebhookEventType>()) { $0.formUnion($1.events) }
        self.drafts = drafts.filter { wantedTypes.contains($0.type) }
        let tokens = Set(self.drafts.compactMap { $0.app == nil ? $0.token?.hex : nil })
        if !tokens.isEmpty {
            var statement = SQLStatement(dialect)
            let list = statement.bindList(tokens.sorted())
            statement.sql = "SELECT token, topic FROM devices WHERE token IN (\(list))"
            lookups.append(.topics(statement))
        }
        for (index, draft) in self.drafts.enumerated() where draft.app == nil && draft.token == nil {
            guard let send = draft.sendID else { continue }
            let target = draft.data["target"]?.stringValue ?? ""
            for app in Set(subscriptions.filter { $0.events.contains(draft.type) }.map(\.app)).sorted() {
                // A send to a topic names its app: no need to look through its outcomes.
                if target.contains(app) {
                    apps[index, default: []].append(app)
                    continue
                }
                // A batch of accepted devices (AcceptedBatch) by its first and last token only, whose apps the
                // database can join: a send without an app whose batch holds a third app's devices between two
                // others' reaches that app's endpoints only if an exception row or another batch names it.
                lookups.append(
                    .sendApp(
                        draft: index, app: app,
                        SQLStatement(
                            dialect,
                            """
                            SELECT 1 FROM send_outcomes o \
                            JOIN devices d ON d.token = \(StoreSQL.tokenHex("o.token", dialect)) \
                            WHERE o.send_ref = \(StoreSQL.sendReference("$1")) AND d.topic = $2 \
                            UNION ALL SELECT 1 FROM send_acceptances a JOIN devices d \
                            ON d.token IN (\(StoreSQL.tokenHex("a.first_token", dialect)), \
                            \(StoreSQL.tokenHex("a.last_token", dialect))) \
                            WHERE a.send_ref = \(StoreSQL.sendReference("$1")) AND d.topic = $2 LIMIT 1
                            """, [.text(send.description), .text(app)])))
            }
        }
    }

    /// The next read to run, whose rows go to ``resolve(_:)``; `nil` when the inserts are ready.
    package mutating func nextLookup() -> SQLStatement? {
        guard !lookups.isEmpty else { return nil }
        current = lookups.removeFirst()
        switch current {
        case .topics(let statement), .sendApp(_, _, let statement): return statement
        case nil: return nil
        }
    }

    /// Takes the rows of the last lookup.
    package mutating func resolve(_ rows: [any StoredRow]) throws {
        switch current {
        case .topics:
            for row in rows { topics[try row.text(0)] = try row.text(1) }
        case .sendApp(let draft, let app, _):
            if !rows.isEmpty { apps[draft, default: []].append(app) }
        case nil: break
        }
        current = nil
    }

    /// The inserts of every event into the outbox of each endpoint that wants it, in the drafts' order.
    package func inserts() -> [SQLStatement] {
        var rows: [(endpoint: String, draft: WebhookEventDraft, app: String)] = []
        for (index, draft) in drafts.enumerated() {
            let draftApps: [String]
            if let app = draft.app {
                draftApps = [app]
            } else if let token = draft.token {
                draftApps = topics[token.hex].map { [$0] } ?? []
            } else {
                draftApps = apps[index] ?? []
            }
            for app in draftApps {
                for subscription in subscriptions where subscription.app == app && subscription.events.contains(draft.type) {
                    rows.append((subscription.id, draft, app))
                }
            }
        }
        return stride(from: 0, to: rows.count, by: 100).map { start in
            StoreSQL.insertWebhookEvents(Array(rows[start..<min(start + 100, rows.count)]), dialect)
        }
    }
}

extension WebhookOutbox {
    /// Whether any endpoint of ``selectSubscriptions(_:)``'s rows subscribes to one of `types`.
    package static func anyWants(_ types: Set<WebhookEventType>, _ rows: [any StoredRow]) throws -> Bool {
        try !wantedTypes(rows).isDisjoint(with: types)
    }

    /// The event types some endpoint of ``selectSubscriptions(_:)``'s rows subscribes to.
    package static func wantedTypes(_ rows: [any StoredRow]) throws -> Set<WebhookEventType> {
        try rows.reduce(into: Set<WebhookEventType>()) { $0.formUnion(StoreSQL.webhookEventTypes(try $1.text(2))) }
    }
}
