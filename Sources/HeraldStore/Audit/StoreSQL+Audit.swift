import Foundation
import HeraldCore

/// The statements of the audit log, for both backends.
extension StoreSQL {
    /// The columns ``StoredRow/auditEntry()`` reads.
    static let auditColumns = "id, at, actor_kind, key_id, actor_name, address, action, app, subject, detail"

    package static func insertAudit(_ entry: AuditEntry, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            "INSERT INTO audit_log (\(auditColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            auditValues(entry))
    }

    /// An entry's values, in ``auditColumns`` order.
    package static func auditValues(_ entry: AuditEntry) -> [SQLStatement.Value] {
        [
            .text(entry.id.lowercasedText), .integer(StoreTime.microseconds(entry.at)),
            .text(entry.actor.kind.rawValue), .textOrNull(entry.actor.keyID?.lowercasedText),
            .text(entry.actor.name), .textOrNull(entry.address), .text(entry.action.rawValue),
            .textOrNull(entry.app), .textOrNull(entry.subject), .text(entry.detail),
        ]
    }

    /// The PostgreSQL type of each of ``auditColumns``.
    package static let auditColumnTypes = [
        "text", "bigint", "text", "text", "text", "text", "text", "text", "text", "text",
    ]

    /// One page of entries, newest first (one row more than the limit).
    package static func auditEntries(
        _ query: AuditQuery, after cursor: AuditCursor?, limit: Int, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(dialect)
        var conditions: [String] = []
        if let cursor {
            let at = statement.bind(.integer(cursor.at))
            let id = statement.bind(.text(cursor.id))
            conditions.append("(at < \(at) OR (at = \(at) AND id < \(id)))")
        }
        if let apps = query.apps {
            let names = apps.sorted().map { statement.bind(.text($0)) }
            conditions.append(names.isEmpty ? "1 = 0" : "app IN (\(names.joined(separator: ", ")))")
        }
        if let keyID = query.keyID { conditions.append("key_id = \(statement.bind(.text(keyID.lowercasedText)))") }
        if let action = query.action { conditions.append("action = \(statement.bind(.text(action.rawValue)))") }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let limitPlaceholder = statement.bind(.integer(Int64(limit + 1)))
        statement.sql = "SELECT \(auditColumns) FROM audit_log\(filter) ORDER BY at DESC, id DESC LIMIT \(limitPlaceholder)"
        return statement
    }

    /// Deletes up to `limit` entries older than a moment, oldest first; returns their ids.
    static func deleteAuditEntries(before cutoff: Int64, limit: Int, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2\
            \(dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : "")) RETURNING id
            """, [.integer(cutoff), .integer(Int64(limit))])
    }
}

extension StoredRow {
    /// An entry from the columns of ``StoreSQL/auditColumns``.
    package func auditEntry() throws -> AuditEntry {
        guard let id = UUID(text: try text(0)), let kind = AuditActor.Kind(rawValue: try text(2)) else {
            throw StoreError(.corruptRecord, "An audit entry has an unreadable id or actor: repair or delete the row.")
        }
        let keyID = try optionalText(3).flatMap { UUID(text: $0) }
        return AuditEntry(
            id: id, at: StoreTime.date(try integer(1)), actor: AuditActor(kind: kind, keyID: keyID, name: try text(4)),
            address: try optionalText(5), action: AuditAction(rawValue: try text(6)), app: try optionalText(7),
            subject: try optionalText(8), detail: try text(9))
    }
}

extension AuditPage {
    /// The page from rows of ``StoreSQL/auditEntries(_:after:limit:_:)`` (at most one more than the limit).
    package init(_ entries: [AuditEntry], limit: Int) {
        let page = Array(entries.prefix(limit))
        let next = entries.count > limit ? page.last.map { AuditCursor(at: StoreTime.microseconds($0.at), id: $0.id.lowercasedText) } : nil
        self.init(entries: page, next: next)
    }
}
