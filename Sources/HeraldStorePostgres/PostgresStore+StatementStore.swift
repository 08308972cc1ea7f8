package import HeraldStore
package import PostgresNIO

/// The shared store code's statements, run on a pooled connection under the operation's time limits. Writes are in a
/// transaction even when they are one statement: only a `COMMIT`'s answer says the write is stored (postgres-nio
/// answers a lone statement before its implicit commit).
extension PostgresStore: StatementStore {
    package var dialect: SQLStatement.Dialect { .postgres }

    package func readRows(_ action: String, _ statements: [SQLStatement]) async throws -> [[PostgresRandomAccessRow]] {
        try await session(action) { session in try await Self.rows(of: statements, in: session) }
    }

    package func writeRows(_ action: String, _ statements: [SQLStatement]) async throws -> [[PostgresRandomAccessRow]] {
        try await transaction(action) { session in try await Self.rows(of: statements, in: session) }
    }

    private static func rows(of statements: [SQLStatement], in session: Session) async throws
        -> [[PostgresRandomAccessRow]]
    {
        var rows: [[PostgresRandomAccessRow]] = []
        rows.reserveCapacity(statements.count)
        for statement in statements { rows.append(try await session.rows(statement)) }
        return rows
    }
}
