import GRDB
import GRDBSQLite
import HeraldCore
import HeraldStore

/// A row of a shared statement's result, read from SQLite's C API.
package struct SQLiteRow: StoredRow, Sendable {
    fileprivate enum Column {
        case null
        case integer(Int64)
        case text(String)
        case blob([UInt8])
        /// A real: no Herald column holds one.
        case other
    }

    fileprivate var columns: [Column]

    package func optionalText(_ index: Int) throws -> String? {
        switch columns[index] {
        case .null: return nil
        case .text(let text): return text
        default: throw Self.unexpectedType(index)
        }
    }

    package func optionalInteger(_ index: Int) throws -> Int64? {
        switch columns[index] {
        case .null: return nil
        case .integer(let integer): return integer
        default: throw Self.unexpectedType(index)
        }
    }

    package func optionalBytes(_ index: Int) throws -> [UInt8]? {
        switch columns[index] {
        case .null: return nil
        case .blob(let bytes): return bytes
        default: throw Self.unexpectedType(index)
        }
    }
}

extension Database {
    /// Runs a shared statement and returns its rows.
    func rows(_ statement: SQLStatement) throws -> [SQLiteRow] {
        var rows: [SQLiteRow] = []
        try run(prepared(statement), binding: statement.binds) { handle in
            let count = sqlite3_column_count(handle)
            var columns: [SQLiteRow.Column] = []
            columns.reserveCapacity(Int(count))
            for index in 0..<count { columns.append(Self.column(index, of: handle)) }
            rows.append(SQLiteRow(columns: columns))
        }
        return rows
    }

    /// Runs a shared statement that returns no rows.
    func execute(_ statement: SQLStatement) throws {
        try run(prepared(statement), binding: statement.binds) { _ in }
    }

    /// Records a batch of outcomes (``OutcomeRecording``): reads what the send has among them, inserts the rows and the
    /// batches of what is left, and counts them.
    func record(_ recording: inout OutcomeRecording) throws -> OutcomeCounts {
        guard let read = recording.priorRead(.sqlite) else { return OutcomeCounts() }
        try recording.resolve(try rows(read))
        var counts = try insertOutcomes(recording.rows, of: recording.send, firstSequence: recording.firstSequence)
        if let batches = recording.insertBatches(.sqlite) {
            try execute(batches)
            counts.accepted += recording.acceptedInBatches
        }
        return counts
    }

    /// Inserts outcomes numbered from `firstSequence`, one prepared row statement each, and counts those inserted: a
    /// device the send already has an outcome for keeps it.
    func insertOutcomes(_ outcomes: [DeliveryOutcome], of id: SendID, firstSequence: Int64) throws -> OutcomeCounts {
        guard !outcomes.isEmpty else { return OutcomeCounts() }
        let statement = try cachedStatement(sql: StoreSQL.insertOneOutcomeSQL)
        guard let reference = try rows(StoreSQL.sendReference(of: id, .sqlite)).first?.optionalInteger(0) else {
            throw SendRecord.notFound(id)
        }
        let send = SQLStatement.Value.integer(reference)
        var counts = OutcomeCounts()
        for (offset, outcome) in outcomes.enumerated() {
            var values = StoreSQL.outcomeValues(outcome, send: id, sequence: firstSequence + Int64(offset))
            let token = outcome.token.bytes
            values[1] = .bytes(token)
            try run(statement, binding: [send] + values + [.bytes(Array(token.suffix(8)))]) { _ in }
            if sqlite3_changes(sqliteConnection) > 0 { counts.add(kinds: CollectionOfOne(outcome.result.kind)) }
        }
        try insertAttempts(outcomes, of: id)
        return counts
    }

    private func prepared(_ statement: SQLStatement) throws -> Statement {
        // Statements with long explicit lists vary in size: caching each shape would only fill the cache.
        statement.binds.count <= 64 ? try cachedStatement(sql: statement.sql) : try makeStatement(sql: statement.sql)
    }

    /// Binds `values` to a prepared statement and steps it to the end, calling `eachRow` on every row.
    ///
    /// This goes to SQLite's C API instead of GRDB's `StatementArguments` and `Row`: a profile of a fan-out put a third
    /// of the writer's time in building generic argument arrays (a key path made at run time per statement) and boxed
    /// row values. It runs only the store's own statements, inside the transactions and savepoints GRDB opened, so
    /// GRDB's bookkeeping of transaction statements is not bypassed.
    private func run(
        _ statement: Statement, binding values: [SQLStatement.Value], eachRow: (OpaquePointer) throws -> Void
    ) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        guard sqlite3_bind_parameter_count(handle) == Int32(values.count) else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "the statement has \(sqlite3_bind_parameter_count(handle)) parameters, \(values.count) bound",
                sql: statement.sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let integer): code = sqlite3_bind_int64(handle, index, integer)
            case .bytes(let bytes):
                code = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob64(
                        handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(buffer.count),
                        Self.transient)
                }
            case .text(var text):
                code = text.withUTF8 { bytes in
                    guard let start = bytes.baseAddress else {
                        return sqlite3_bind_text64(handle, index, "", 0, Self.transient, UInt8(SQLITE_UTF8))
                    }
                    return start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text64(
                            handle, index, $0, sqlite3_uint64(bytes.count), Self.transient, UInt8(SQLITE_UTF8))
                    }
                }
            }
            guard code == SQLITE_OK else { throw failure(statement) }
        }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: try eachRow(handle)
            case SQLITE_DONE: return
            default: throw failure(statement)
            }
        }
    }

    private func failure(_ statement: Statement) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: sqlite3_extended_errcode(sqliteConnection)),
            message: String(cString: sqlite3_errmsg(sqliteConnection)), sql: statement.sql)
    }

    /// SQLite copies bound text before `sqlite3_bind_text64` returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func column(_ index: Int32, of handle: OpaquePointer) -> SQLiteRow.Column {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let blob = sqlite3_column_blob(handle, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default: return .other
        }
    }
}
