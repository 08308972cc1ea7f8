import GRDB
package import HeraldStore

/// The shared store code's statements, run on the writer's queue (group-committed) and on reader connections.
extension SQLiteStore: StatementStore {
    package var dialect: SQLStatement.Dialect { .sqlite }

    package func readRows(_ action: String, _ statements: [SQLStatement]) async throws -> [[SQLiteRow]] {
        try await read(action) { db in try statements.map { try db.rows($0) } }
    }

    package func writeRows(_ action: String, _ statements: [SQLStatement]) async throws -> [[SQLiteRow]] {
        try await write(action) { db in try statements.map { try db.rows($0) } }
    }
}
