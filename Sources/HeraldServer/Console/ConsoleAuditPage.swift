import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The console's *Audit log* page: an admin's, limited to the session's apps.
struct ConsoleAuditPage: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]

    /// The kinds of change the page offers to filter by.
    static let auditKinds: [AuditAction] = [
        .keyCreated, .keyRevoked, .sendCreated, .sendCancelled, .deviceRegistered, .deviceRemoved, .activityStarted,
        .activityEnded, .channelCreated, .channelDeleted, .broadcastSent, .signedIn, .signedOut, .keyExpired,
        .preferencesChanged, .webhookCreated, .webhookChanged, .webhookPaused, .webhookResumed, .webhookSecretRotated,
        .webhookDeleted, .webhookReplayed,
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
        let next = page.next.map {
            Self.link("/console/audit", [("kind", kind ?? ""), ("app", app ?? ""), ("after", $0.description)])
        }
        let entries = page.entries.map { entry in
            AuditView.Entry(
                at: Self.display(entry.at), actor: "\(entry.actor.name) (\(entry.actor.kind.rawValue))",
                address: entry.address ?? "—", kind: entry.action.rawValue, app: entry.app ?? "—",
                subject: entry.subject ?? "—", detail: entry.detail)
        }
        let view = AuditView(
            entries: entries, hasEntries: !entries.isEmpty,
            kinds: Self.auditKinds.map { ConsoleOption(value: $0.rawValue, label: $0.rawValue, selected: $0.rawValue == kind) },
            apps: visibleApps(context).map { ConsoleOption(value: $0, label: $0, selected: $0 == app) }, next: next)
        return renderer.page("audit", title: "Audit log", section: .audit, view: view, context: context)
    }

    /// audit.mustache's values.
    struct AuditView: ConsoleView {
        struct Entry {
            let at: String
            let actor: String
            let address: String
            let kind: String
            let app: String
            let subject: String
            let detail: String
        }

        let entries: [Entry]
        let hasEntries: Bool
        let kinds: [ConsoleOption]
        let apps: [ConsoleOption]
        /// The next page's link, when there is one.
        let next: String?
    }
}
