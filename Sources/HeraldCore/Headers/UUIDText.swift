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
        guard let halves = Self.halves(of: text, lowercaseOnly: false) else { return nil }
        self.init(high: halves.high, low: halves.low)
    }

    /// Parses the canonical lowercase 8-4-4-4-12 form only (as APNs writes ids, and ``lowercasedText`` gives them):
    /// `nil` for any upper-case digit, so that a UUID read back from its bytes spells the text it came from.
    public init?(lowercasedText text: some StringProtocol) {
        guard let halves = Self.halves(of: text, lowercaseOnly: true) else { return nil }
        self.init(high: halves.high, low: halves.low)
    }

    /// The two halves of the UUID a text spells. Read from the text's UTF-8 bytes in place where it has them (a
    /// native string, a substring of one): iterating a string's UTF-8 view byte by byte took 5 % of a fan-out's CPU,
    /// where every answer's `apns-id` is parsed.
    private static func halves(
        of text: some StringProtocol, lowercaseOnly: Bool
    ) -> (high: UInt64, low: UInt64)? {
        if let parsed = text.utf8.withContiguousStorageIfAvailable({ halves(of: $0, lowercaseOnly: lowercaseOnly) }) {
            return parsed
        }
        return Array(text.utf8).withUnsafeBufferPointer { halves(of: $0, lowercaseOnly: lowercaseOnly) }
    }

    private static func halves(
        of bytes: UnsafeBufferPointer<UInt8>, lowercaseOnly: Bool
    ) -> (high: UInt64, low: UInt64)? {
        guard bytes.count == 36 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        for position in 0..<36 {
            let byte = bytes[position]
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F") where !lowercaseOnly: nibble = byte &- UInt8(ascii: "A") &+ 10
            default: return nil
            }
            if digits < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
            digits += 1
        }
        return (high, low)
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
