package import Foundation

/// A statement both backends can run: SQL text with numbered placeholders, and the values to bind.
///
/// The SQL text Herald writes is the same for SQLite and PostgreSQL; only placeholders differ (`?1` and `$1`).
package struct SQLStatement: Sendable {
    /// How a backend numbers its placeholders.
    package enum Dialect: Sendable {
        /// SQLite's `?1`, `?2`, …
        case sqlite
        /// PostgreSQL's `$1`, `$2`, …
        case postgres
    }

    /// A value to bind.
    package enum Value: Sendable, Hashable {
        case text(String)
        case integer(Int64)
        /// Raw bytes: a `BLOB` on SQLite, `bytea` on PostgreSQL.
        case bytes([UInt8])
        case null
    }

    package let dialect: Dialect
    package var sql = ""
    package private(set) var binds: [Value] = []

    /// An empty statement, built with ``bind(_:)-(Value)``.
    package init(_ dialect: Dialect) { self.dialect = dialect }

    /// A statement from SQL written with `$1`, `$2`, … placeholders (and no other `$`).
    package init(_ dialect: Dialect, _ sql: String, _ binds: [Value] = []) {
        self.dialect = dialect
        self.sql = dialect == .sqlite ? Self.sqlitePlaceholders(sql) : sql
        self.binds = binds
    }

    /// `sql` with every `$` replaced by `?`. A copy into a new string's storage, not `replacingOccurrences` (through
    /// NSString, it cost more than running the statement) nor a map of the UTF-8 view (an array and a validation per
    /// call: 5 % of the SQLite writer's time during registrations).
    private static func sqlitePlaceholders(_ sql: String) -> String {
        var sql = sql
        return sql.withUTF8 { source in
            String(unsafeUninitializedCapacity: source.count) { target in
                for index in source.indices {
                    target[index] = source[index] == UInt8(ascii: "$") ? UInt8(ascii: "?") : source[index]
                }
                return source.count
            }
        }
    }

    /// Adds a value and returns its placeholder.
    package mutating func bind(_ value: Value) -> String {
        binds.append(value)
        return (dialect == .sqlite ? "?" : "$") + String(binds.count)
    }

    /// Adds a text value and returns its placeholder.
    package mutating func bind(_ text: String) -> String { bind(.text(text)) }

    /// Adds values and returns their placeholders separated by commas, for `IN (…)`.
    package mutating func bindList(_ texts: [String]) -> String {
        texts.map { bind(.text($0)) }.joined(separator: ", ")
    }

    /// The placeholders of a claim by a worker (of a send, or of a shard).
    package struct ClaimPlaceholders {
        package let worker: String
        package let lease: String
        package let now: String
        /// The lanes, for `IN (…)`.
        package let lanes: String
        /// ` AND column NOT IN (…)` for the sends left out; empty when none is.
        package let excluded: String
    }

    /// Binds what a claim needs: the worker, its lease's end, now, the lanes it claims from (sorted, so one set of
    /// lanes is one statement text, planned once per shape by PostgreSQL) and the sends it leaves out (`column`
    /// holds a send's id).
    package mutating func bindClaim(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID>, column: String, at now: Date
    ) -> ClaimPlaceholders {
        let worker = bind(worker)
        let lease = bind(.integer(StoreTime.microseconds(leaseUntil)))
        let now = bind(.integer(StoreTime.microseconds(now)))
        let lanes = bindList(lanes.map(\.rawValue).sorted())
        let excluded =
            excluding.isEmpty ? "" : " AND \(column) NOT IN (\(bindList(excluding.map(\.description).sorted())))"
        return ClaimPlaceholders(worker: worker, lease: lease, now: now, lanes: lanes, excluded: excluded)
    }
}

extension SQLStatement.Value {
    /// Text, or `NULL` for `nil`.
    package static func textOrNull(_ value: String?) -> Self { value.map(Self.text) ?? .null }
    /// An integer, or `NULL` for `nil`.
    package static func integerOrNull(_ value: Int64?) -> Self { value.map(Self.integer) ?? .null }
    /// An integer from an `Int`, or `NULL` for `nil`.
    package static func integerOrNull(_ value: Int?) -> Self { value.map { .integer(Int64($0)) } ?? .null }
}

/// A PostgreSQL statement whose parameters are arrays, so that one call carries many rows: parameter `$j` is the
/// array of every row's `j`-th value. SQLite has no arrays: only PostgreSQL runs these.
package struct SQLArrayStatement: Sendable {
    /// One parameter: a value of each row.
    package enum Column: Sendable, Hashable {
        /// `TEXT[]`; `nil` is `NULL`.
        case text([String?])
        /// `BIGINT[]`; `nil` is `NULL`.
        case integer([Int64?])
        /// `BYTEA[]`; `nil` is `NULL`.
        case bytes([[UInt8]?])
    }

    /// The type of a column given by its statement, whatever its values (all `NULL`, or none).
    package enum ColumnType: Sendable {
        case text, integer, bytes

        /// PostgreSQL's name for an element of this type.
        package var sqlName: String {
            switch self {
            case .text: "text"
            case .integer: "bigint"
            case .bytes: "bytea"
            }
        }
    }

    /// SQL with `$1`, `$2`, … placeholders: one per column, then one per scalar.
    package let sql: String
    /// The array parameters, in placeholder order.
    package let columns: [Column]
    /// Single values bound after the columns.
    package let scalars: [SQLStatement.Value]

    /// A statement from rows of binds, all of one width, transposed into columns: a column of integers (and `NULL`s)
    /// is `BIGINT[]`, any other `TEXT[]`. `scalars` follow the columns' placeholders.
    package init(sql: String, rows: [[SQLStatement.Value]], width: Int? = nil, scalars: [SQLStatement.Value] = []) {
        self.init(sql: sql, tables: [(rows, width ?? rows.first?.count ?? 0)], scalars: scalars)
    }

    /// A statement from several sets of rows (each of one width, say sends and their outcomes), each transposed into
    /// columns as ``init(sql:rows:width:scalars:)`` does: the first set's columns are the first parameters.
    package init(
        sql: String, tables: [(rows: [[SQLStatement.Value]], width: Int)], scalars: [SQLStatement.Value] = []
    ) {
        self.init(
            sql: sql, typedTables: tables.map { ($0.rows, Self.inferredTypes(of: $0.rows, width: $0.width)) },
            scalars: scalars)
    }

    /// A statement from several sets of rows, each transposed into columns of the types given (one per value of a
    /// row): the same parameter types for any rows, as a statement PostgreSQL prepares needs.
    package init(
        sql: String, typedTables: [(rows: [[SQLStatement.Value]], types: [ColumnType])],
        scalars: [SQLStatement.Value] = []
    ) {
        self.sql = sql
        self.scalars = scalars
        columns = typedTables.flatMap { table in
            precondition(table.rows.allSatisfy { $0.count == table.types.count }, "every row binds the same parameters")
            return table.types.enumerated().map { index, type -> Column in
                let values = table.rows.map { $0[index] }
                func value<T>(_ unwrap: (SQLStatement.Value) -> T?) -> [T?] {
                    values.map { value in
                        if case .null = value { return nil }
                        guard let unwrapped = unwrap(value) else {
                            preconditionFailure("parameter \(index + 1) is not all of type \(type)")
                        }
                        return unwrapped
                    }
                }
                switch type {
                case .text:
                    return .text(value { (stored: SQLStatement.Value) -> String? in
                        if case .text(let text) = stored { return text }
                        return nil
                    })
                case .integer:
                    return .integer(value { (stored: SQLStatement.Value) -> Int64? in
                        if case .integer(let integer) = stored { return integer }
                        return nil
                    })
                case .bytes:
                    return .bytes(value { (stored: SQLStatement.Value) -> [UInt8]? in
                        if case .bytes(let bytes) = stored { return bytes }
                        return nil
                    })
                }
            }
        }
    }

    /// Each column's type from its values: integers (and `NULL`s) are `BIGINT[]`, any other `TEXT[]`.
    private static func inferredTypes(of rows: [[SQLStatement.Value]], width: Int) -> [ColumnType] {
        (0..<width).map { index in
            let values = rows.map { $0[index] }
            precondition(
                !values.contains { if case .bytes = $0 { true } else { false } },
                "parameter \(index + 1): give the type of an array parameter of bytes")
            return values.contains { if case .integer = $0 { true } else { false } } ? .integer : .text
        }
    }
}
