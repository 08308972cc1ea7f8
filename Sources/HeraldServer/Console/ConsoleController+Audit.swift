import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleController {
    /// The kinds of change the page offers to filter by.
    static let auditKinds: [AuditAction] = [
        .keyCreated, .keyRevoked, .sendCreated, .sendCancelled, .deviceRemoved, .activityStarted, .activityEnded,
        .channelCreated, .channelDeleted, .broadcastSent, .signedIn, .signedOut, .keyExpired, .preferencesChanged,
        .webhookCreated, .webhookChanged, .webhookPaused, .webhookResumed, .webhookSecretRotated, .webhookDeleted,
        .webhookReplayed,
    ]

    /// `/console/audit?kind=&app=&after=`: the audit log, newest first, 50 entries a page.
    @Sendable func audit(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let kind = try request.queryParameter("kind").flatMap { $0.isEmpty ? nil : $0 }
        let app = try request.queryParameter("app").flatMap { $0.isEmpty ? nil : $0 }
        var query = AuditQuery(apps: Self.access(context).topics)
        if let kind { query.action = AuditAction(rawValue: kind) }
        if let app {
            try Self.access(context).check(app: app)
            query.apps = [app]
        }
        var cursor: AuditCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty {
            guard let parsed = AuditCursor(after) else {
                throw APIError.invalidField("after", "use the link of the previous page")
            }
            cursor = parsed
        }
        let page = try await store.auditEntries(query, after: cursor, limit: 50)
        let rows: [[String: Any]] = page.entries.map { entry in
            [
                "at": Self.display(entry.at), "actor": "\(entry.actor.name) (\(entry.actor.kind.rawValue))",
                "address": entry.address ?? "—", "kind": entry.action.rawValue, "app": entry.app ?? "—",
                "subject": entry.subject ?? "—", "detail": entry.detail,
            ]
        }
        var data: [String: Any] = [
            "entries": rows, "hasEntries": !rows.isEmpty,
            "kinds": Self.auditKinds.map { ["value": $0.rawValue, "selected": $0.rawValue == kind] },
            "apps": visibleApps(context).map { ["value": $0, "selected": $0 == app] },
        ]
        if let next = page.next {
            data["next"] = Self.link(
                "/console/audit", [("kind", kind ?? ""), ("app", app ?? ""), ("after", next.description)])
        }
        return renderer.page("audit", title: "Audit log", section: .audit, data: data, context: context)
    }
}
