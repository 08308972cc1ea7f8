import GRDB
import HeraldStore

/// GRDB rows read through the shared decoders.
extension Row: StoredRow {
    package func optionalText(_ index: Int) throws -> String? {
        let value: DatabaseValue = self[index]
        switch value.storage {
        case .null: return nil
        case .string(let text): return text
        default: throw Self.unexpectedType(index)
        }
    }

    package func optionalInteger(_ index: Int) throws -> Int64? {
        let value: DatabaseValue = self[index]
        switch value.storage {
        case .null: return nil
        case .int64(let integer): return integer
        default: throw Self.unexpectedType(index)
        }
    }
}

extension Database {
    /// Runs a shared statement and returns its rows.
    func rows(_ statement: SQLStatement) throws -> [Row] {
        try Row.fetchAll(prepared(statement), arguments: arguments(statement))
    }

    /// Runs a shared statement that returns no rows.
    func execute(_ statement: SQLStatement) throws {
        try prepared(statement).execute(arguments: arguments(statement))
    }

    private func prepared(_ statement: SQLStatement) throws -> Statement {
        // Statements with long explicit lists vary in size: caching each shape would only fill the cache.
        statement.binds.count <= 64 ? try cachedStatement(sql: statement.sql) : try makeStatement(sql: statement.sql)
    }

    private func arguments(_ statement: SQLStatement) -> StatementArguments {
        StatementArguments(
            statement.binds.map { value -> DatabaseValue in
                switch value {
                case .text(let text): text.databaseValue
                case .integer(let integer): integer.databaseValue
                case .null: .null
                }
            })
    }
}
