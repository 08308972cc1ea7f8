public import Foundation

extension UUID {
    /// The canonical 8-4-4-4-12 form in lowercase, as APNs and Herald's API show ids.
    ///
    /// Written digit by digit: Foundation's `uuidString` formats through `snprintf` on Linux and `lowercased()` copies
    /// it again, which the server pays for every notification and every outcome it records.
    public var lowercasedText: String {
        let (high, low) = halves
        return Self.text(high: high, low: low)
    }

    /// Parses the 8-4-4-4-12 form in either case, as `UUID(uuidString:)` does, without `sscanf`.
    public init?(text: some StringProtocol) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        var position = 0
        for byte in text.utf8 {
            defer { position += 1 }
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            if digits < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
            digits += 1
        }
        guard position == 36, digits == 32 else { return nil }
        self.init(high: high, low: low)
    }

    /// The UUID whose bytes are `high` then `low`, big-endian.
    public init(high: UInt64, low: UInt64) {
        func byte(_ value: UInt64, _ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * index)) }
        self.init(
            uuid: (
                byte(high, 0), byte(high, 1), byte(high, 2), byte(high, 3), byte(high, 4), byte(high, 5),
                byte(high, 6), byte(high, 7), byte(low, 0), byte(low, 1), byte(low, 2), byte(low, 3), byte(low, 4),
                byte(low, 5), byte(low, 6), byte(low, 7)
            ))
    }

    /// The first and last eight bytes, big-endian.
    public var halves: (high: UInt64, low: UInt64) {
        withUnsafeBytes(of: uuid) { bytes in
            (UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
             UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    /// The lowercase 8-4-4-4-12 form of the UUID whose bytes are `high` then `low` (big-endian).
    public static func text(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            for value in [high, low] {
                for shift in stride(from: 60, through: 0, by: -4) {
                    if position == 8 || position == 13 || position == 18 || position == 23 {
                        buffer[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    let nibble = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF
                    buffer[position] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                    position += 1
                }
            }
            return position
        }
    }
}
