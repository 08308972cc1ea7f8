import Foundation
import GRDB

/// `herald_unhex(text)`: the bytes of lowercase or uppercase hex digits, `NULL` for anything else. Outcomes store a
/// device token as its bytes (migration 27) while the API and the other tables speak its hex; the system's SQLite
/// (3.40) predates the built-in `unhex()`. Reading goes back with the built-in `lower(hex(token))`.
enum HexFunction {
    static let unhex = DatabaseFunction("herald_unhex", argumentCount: 1, pure: true) {
        values -> (any DatabaseValueConvertible)? in
        guard let text = String.fromDatabaseValue(values[0]) else { return nil }
        return bytes(ofHex: text)
    }

    static func bytes(ofHex text: String) -> Data? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(of: digits[index]), let low = value(of: digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
