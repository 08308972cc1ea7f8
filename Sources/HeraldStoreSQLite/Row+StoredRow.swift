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

    /// Inserts outcomes numbered from `firstSequence`, one prepared row statement each, and counts those inserted: a
    /// device the send already has an outcome for keeps it.
    func insertOutcomes(_ outcomes: [DeliveryOutcome], of id: SendID, firstSequence: Int64) throws -> OutcomeCounts {
        let statement = try cachedStatement(sql: StoreSQL.insertOneOutcomeSQL)
        let send = id.description.databaseValue
        var counts = OutcomeCounts()
        for (offset, outcome) in outcomes.enumerated() {
            let values = StoreSQL.outcomeValues(outcome, sequence: firstSequence + Int64(offset))
            try statement.execute(arguments: StatementArguments([send] + values.map(\.databaseValue)))
            if changesCount > 0 { counts.add(kinds: CollectionOfOne(outcome.result.kind)) }
        }
        return counts
    }

    private func prepared(_ statement: SQLStatement) throws -> Statement {
        // Statements with long explicit lists vary in size: caching each shape would only fill the cache.
        statement.binds.count <= 64 ? try cachedStatement(sql: statement.sql) : try makeStatement(sql: statement.sql)
    }

    private func arguments(_ statement: SQLStatement) -> StatementArguments {
        StatementArguments(statement.binds.map(\.databaseValue))
    }
}

extension SQLStatement.Value {
    var databaseValue: DatabaseValue {
        switch self {
        case .text(let text): text.databaseValue
        case .integer(let integer): integer.databaseValue
        case .null: .null
        }
    }
}
