import HeraldStore
import PostgresNIO

/// postgres-nio rows read through the shared decoders.
extension PostgresRandomAccessRow: StoredRow {
    package func optionalText(_ index: Int) throws -> String? {
        do { return try self[index].decode(String?.self) } catch { throw Self.unexpectedType(index) }
    }

    package func optionalInteger(_ index: Int) throws -> Int64? {
        do { return try self[index].decode(Int64?.self) } catch { throw Self.unexpectedType(index) }
    }
}

extension PostgresConnection {
    /// Runs a shared statement and returns its rows.
    func rows(_ statement: SQLStatement, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var binds = PostgresBindings(capacity: statement.binds.count)
        for value in statement.binds {
            switch value {
            case .text(let text): binds.append(text)
            case .integer(let integer): binds.append(integer)
            case .null: binds.appendNull()
            }
        }
        let sequence = try await query(PostgresQuery(unsafeSQL: statement.sql, binds: binds), logger: logger)
        var rows: [PostgresRandomAccessRow] = []
        for try await row in sequence { rows.append(PostgresRandomAccessRow(row)) }
        return rows
    }

    /// Runs a shared statement that returns no rows.
    func execute(_ statement: SQLStatement, logger: Logger) async throws {
        _ = try await rows(statement, logger: logger)
    }
}
