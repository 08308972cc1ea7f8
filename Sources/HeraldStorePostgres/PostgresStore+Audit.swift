import Foundation
public import HeraldStore

extension PostgresStore {
    public func recordAudit(_ entry: AuditEntry) async throws {
        let entry = try entry.validated()
        try await transaction("record an audit entry") { session in
            try await session.execute(StoreSQL.insertAudit(entry, .postgres))
        }
    }

    public func auditEntries(_ query: AuditQuery, after cursor: AuditCursor?, limit: Int) async throws -> AuditPage {
        try await session("read the audit log") { session in
            let rows = try await session.rows(StoreSQL.auditEntries(query, after: cursor, limit: limit, .postgres))
            return AuditPage(try rows.map { try $0.auditEntry() }, limit: limit)
        }
    }
}
