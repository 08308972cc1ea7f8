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

    package func optionalBytes(_ index: Int) throws -> [UInt8]? {
        do { return try self[index].decode(ByteBuffer?.self).map { Array($0.readableBytesView) } } catch {
            throw Self.unexpectedType(index)
        }
    }
}

extension PostgresConnection {
    /// Runs a shared statement and returns its rows.
    func rows(_ statement: SQLStatement, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var binds = PostgresBindings(capacity: statement.binds.count)
        for value in statement.binds { binds.append(value) }
        if let shape = PreparedShapes.bySQL[statement.sql] { return try await shape.rows(binds, on: self, logger: logger) }
        return try await rows(PostgresQuery(unsafeSQL: statement.sql, binds: binds), logger: logger)
    }

    /// Runs a statement of array parameters and returns its rows.
    func rows(_ statement: SQLArrayStatement, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var binds = PostgresBindings(capacity: statement.columns.count + statement.scalars.count)
        for column in statement.columns {
            switch column {
            case .text(let texts): binds.append(NullableArray(texts))
            case .integer(let integers): binds.append(NullableArray(integers))
            case .bytes(let bytes): binds.append(NullableArray(bytes.map { $0.map { ByteBuffer(bytes: $0) } }))
            }
        }
        for value in statement.scalars { binds.append(value) }
        if let shape = PreparedShapes.bySQL[statement.sql] { return try await shape.rows(binds, on: self, logger: logger) }
        return try await rows(PostgresQuery(unsafeSQL: statement.sql, binds: binds), logger: logger)
    }

    private func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var rows: [PostgresRandomAccessRow] = []
        for try await row in try await self.query(query, logger: logger) { rows.append(PostgresRandomAccessRow(row)) }
        return rows
    }

    /// Runs a shared statement that returns no rows.
    func execute(_ statement: SQLStatement, logger: Logger) async throws {
        _ = try await rows(statement, logger: logger)
    }
}

extension PostgresBindings {
    mutating func append(_ value: SQLStatement.Value) {
        switch value {
        case .text(let text): append(text)
        case .integer(let integer): append(integer)
        case .bytes(let bytes): append(ByteBuffer(bytes: bytes))
        case .null: appendNull()
        }
    }
}

/// A one-dimensional array whose elements may be `NULL`, in PostgreSQL's binary array format: postgres-nio encodes
/// arrays of non-optional elements only.
private struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>:
    PostgresNonThrowingEncodable
{
    let elements: [Element?]

    init(_ elements: [Element?]) { self.elements = elements }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        // Dimensions (none for an empty array), whether any element is NULL, the elements' type.
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        // The one dimension's length and lower bound, then each element: its length (-1 for NULL) and its bytes.
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - lengthIndex - 4), at: lengthIndex)
        }
    }
}
