import Foundation

/// The audit log: every change made through the API, the console or the CLI (docs/security.md, "Audit log"). Kept
/// until retention deletes it (``RetentionKind/auditLog``).
public protocol AuditStore: Sendable {
    /// Stores an entry.
    /// - Throws: ``StoreError`` `.invalidRecord` when a text is longer than the log keeps (names and details 1,000
    ///   bytes, the rest 255).
    func recordAudit(_ entry: AuditEntry) async throws

    /// One page of entries matching a query, newest first, starting after a cursor.
    /// - Parameter limit: 1 to 1,000.
    func auditEntries(_ query: AuditQuery, after cursor: AuditCursor?, limit: Int) async throws -> AuditPage
}

extension AuditEntry {
    /// Checks the lengths the log keeps.
    package func validated() throws -> AuditEntry {
        let short = [address, action.rawValue, app, subject].compactMap { $0 }
        guard !actor.name.isEmpty, actor.name.utf8.count <= 1_000, detail.utf8.count <= 1_000,
            short.allSatisfy({ $0.utf8.count <= 255 }), !action.rawValue.isEmpty
        else {
            throw StoreError(
                .invalidRecord,
                "An audit entry needs an actor and an action, names and details of at most 1,000 bytes and other fields of at most 255."
            )
        }
        return self
    }

    /// The entry cut to what ``validated()`` accepts (at a character's boundary): for an entry written with the change
    /// it records, which a long detail must not refuse.
    package func clipped() -> AuditEntry {
        func clip(_ text: String, _ bytes: Int) -> String {
            guard text.utf8.count > bytes else { return text }
            var cut = ""
            for character in text {
                guard cut.utf8.count + character.utf8.count <= bytes - 3 else { break }
                cut.append(character)
            }
            return cut + "…"
        }
        var entry = self
        entry.actor.name = clip(actor.name.isEmpty ? "unknown" : actor.name, 1_000)
        entry.detail = clip(detail, 1_000)
        entry.address = address.map { clip($0, 255) }
        entry.app = app.map { clip($0, 255) }
        entry.subject = subject.map { clip($0, 255) }
        return entry
    }
}
