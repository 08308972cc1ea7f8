/// A JSON value: what custom payload keys, Live Activity state and raw payloads are made of.
///
/// Integers and fractional numbers are kept apart so that `{"badge": 1}` round-trips as `1`, not `1.0`.
/// Objects are unordered, as JSON objects are; compare payloads structurally with `==`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text (RFC 8259, strict: no comments, no trailing commas, no leading zeros).
    /// - Throws: ``JSONParseError`` with the byte offset of the first problem.
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        self = try JSONParser.parse(bytes)
    }

    /// Parses JSON text from a string.
    public init(parsing text: String) throws(JSONParseError) {
        self = try JSONParser.parse(Array(text.utf8))
    }

    /// The compact JSON encoding.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.write(self)
        return writer.bytes
    }

    /// The compact JSON encoding as text.
    public var jsonString: String { String(decoding: jsonBytes, as: UTF8.self) }

    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var objectValue: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let value) = self { value } else { nil } }

    /// An integer, also from a fractional number with no fractional part (`1.0`).
    public var intValue: Int? {
        switch self {
        case .integer(let value): value
        case .number(let value) where value.rounded() == value && abs(value) < 9.0e15: Int(value)
        default: nil
        }
    }

    /// Any number as a `Double`.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// The JSON type's name, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    public subscript(key: String) -> JSONValue? { objectValue?[key] }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { jsonString }
}

/// Where and why JSON text could not be parsed.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset of the problem in the input.
    public let offset: Int
    /// What was wrong there.
    public let problem: String

    public var description: String { "Invalid JSON at byte \(offset): \(problem)." }
}
