extension StatementStore {
    public func recordAudit(_ entry: AuditEntry) async throws {
        _ = try await writeRows("record an audit entry", StoreSQL.insertAudit(try entry.validated(), dialect))
    }

    public func auditEntries(_ query: AuditQuery, after cursor: AuditCursor?, limit: Int) async throws -> AuditPage {
        let page = StoreSQL.auditEntries(query, after: cursor, limit: limit, dialect)
        return AuditPage(try await readRows("read the audit log", page).map { try $0.auditEntry() }, limit: limit)
    }
}
