import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func recordAudit(_ entry: AuditEntry) async throws {
        let entry = try entry.validated()
        try await write("record an audit entry") { db in
            try db.execute(StoreSQL.insertAudit(entry, .sqlite))
        }
    }

    public func auditEntries(_ query: AuditQuery, after cursor: AuditCursor?, limit: Int) async throws -> AuditPage {
        try await read("read the audit log") { db in
            AuditPage(
                try db.rows(StoreSQL.auditEntries(query, after: cursor, limit: limit, .sqlite)).map {
                    try $0.auditEntry()
                }, limit: limit)
        }
    }
}
