import Foundation
public import HeraldCore

#if canImport(CoreFoundation) && canImport(Darwin)
import CoreFoundation
#endif

extension JSONValue {
    /// Converts what `JSONSerialization` or the system hands an app (a notification's `userInfo`) into a JSON value.
    ///
    /// Booleans and numbers need care: both arrive as `NSNumber`, and on Linux an `NSNumber` of `1` even casts to
    /// `Bool`. A Boolean `NSNumber` (`CFBoolean` on Apple platforms, `objCType` `c` elsewhere) becomes `.bool`; other
    /// numbers become `.integer` unless they are floating point, so `"content-available": 1` stays `1` and `true`
    /// stays `true`.
    /// - Parameters:
    ///   - foundationValue: a string, number, Boolean, `NSNull`, array or dictionary with string keys, nested freely.
    ///   - path: where the value sits, used in error messages (`userInfo.aps.badge`).
    /// - Throws: ``NotificationDecodingError`` naming the path of a value JSON cannot hold (a `Date`, `Data`, or a
    ///   dictionary key that is not a string).
    public init(foundationValue: Any, path: String = "userInfo") throws(NotificationDecodingError) {
        // Exact Swift types first: a Swift `Bool` or `Int` is unambiguous, whereas `as? Bool` would also match NSNumber 1.
        switch foundationValue {
        case let text as String:
            self = .string(text)
        case let flag as Bool where type(of: foundationValue) == Bool.self:
            self = .bool(flag)
        case let number as NSNumber:
            self = Self.number(number)
        case is NSNull:
            self = .null
        case let elements as [Any]:
            var values = [JSONValue]()
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                values.append(try JSONValue(foundationValue: element, path: "\(path)[\(index)]"))
            }
            self = .array(values)
        case let dictionary as [AnyHashable: Any]:
            self = .object(try Self.members(of: dictionary, path: path))
        default:
            if let number = Self.swiftNumber(foundationValue) {
                self = number
            } else {
                throw NotificationDecodingError(
                    .unsupportedValue, path: path,
                    "\(path) is a \(type(of: foundationValue)), which a notification payload cannot hold: payloads carry only strings, numbers, Booleans, null, arrays and dictionaries."
                )
            }
        }
    }

    /// The members of a dictionary whose keys are all strings.
    static func members(of dictionary: [AnyHashable: Any], path: String) throws(NotificationDecodingError) -> [String:
        JSONValue]
    {
        var members = [String: JSONValue]()
        members.reserveCapacity(dictionary.count)
        for (key, value) in dictionary {
            guard let name = key.base as? String else {
                throw NotificationDecodingError(
                    .nonStringKey, path: path,
                    "\(path) has the key \(key.base) of type \(type(of: key.base)); JSON object keys are strings.")
            }
            members[name] = try JSONValue(foundationValue: value, path: "\(path).\(name)")
        }
        return members
    }

    private static func number(_ number: NSNumber) -> JSONValue {
        if isBoolean(number) { return .bool(number.boolValue) }
        switch String(cString: number.objCType) {
        case "d", "f":
            return .number(number.doubleValue)
        case "Q", "L", "I", "S", "C":
            // Unsigned: only values beyond Int.max need a Double.
            let value = number.uint64Value
            return value <= UInt64(Int.max) ? .integer(Int(value)) : .number(number.doubleValue)
        default:
            return .integer(number.intValue)
        }
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        #if canImport(CoreFoundation) && canImport(Darwin)
        CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation gives Booleans their own subclass with objCType "c"; integers never use "c".
        String(cString: number.objCType) == "c"
        #endif
    }

    /// Swift numeric types that did not bridge to NSNumber.
    private static func swiftNumber(_ value: Any) -> JSONValue? {
        switch value {
        case let number as Int: .integer(number)
        case let number as Int8: .integer(Int(number))
        case let number as Int16: .integer(Int(number))
        case let number as Int32: .integer(Int(number))
        case let number as Int64: .integer(Int(number))
        case let number as UInt8: .integer(Int(number))
        case let number as UInt16: .integer(Int(number))
        case let number as UInt32: .integer(Int(number))
        case let number as UInt: number <= UInt(Int.max) ? .integer(Int(number)) : .number(Double(number))
        case let number as UInt64: number <= UInt64(Int.max) ? .integer(Int(number)) : .number(Double(number))
        case let number as Double: .number(number)
        case let number as Float: .number(Double(number))
        default: nil
        }
    }
}

extension JSONValue {
    /// The value as the Foundation objects `JSONSerialization` would produce, for APIs that take `userInfo`.
    ///
    /// Booleans become `NSNumber` Booleans (`CFBoolean` on Apple platforms), integers and other numbers `NSNumber`s,
    /// `null` becomes `NSNull`, so ``init(foundationValue:path:)`` reads the result back unchanged.
    public var foundationValue: Any {
        switch self {
        case .null: NSNull()
        case .bool(let flag): NSNumber(value: flag)
        case .integer(let number): NSNumber(value: number)
        case .number(let number): NSNumber(value: number)
        case .string(let text): text
        case .array(let elements): elements.map(\.foundationValue)
        case .object(let members): members.mapValues(\.foundationValue)
        }
    }
}
