public import Foundation

extension UUID {
    /// A version-7 UUID (RFC 9562 §5.7): the Unix time in milliseconds (the nearest) in its first 48 bits, then 74 random
    /// bits.
    ///
    /// Ids minted one after another sort in the order they were made, as text and as bytes, so a table keyed by them
    /// takes new rows at the end of its index (a few pages per commit) instead of on a random page each. The random
    /// bits come from the system's generator (no file opened per id, unlike Foundation's `UUID()` on Linux).
    public static func timeOrdered(at date: Date = Date()) -> UUID {
        var generator = SystemRandomNumberGenerator()
        return timeOrdered(at: date, using: &generator)
    }

    /// A version-7 UUID for `date` whose random bits come from `generator`.
    public static func timeOrdered(at date: Date, using generator: inout some RandomNumberGenerator) -> UUID {
        let milliseconds = UInt64(max(0, min((date.timeIntervalSince1970 * 1000).rounded(), Double(UInt64(1) << 48 - 1))))
        let high = milliseconds << 16 | 0x7000 | generator.next() & 0x0FFF
        let low = generator.next() & ~(0x3 << 62) | (0x2 << 62)
        return UUID(high: high, low: low)
    }

    /// The Unix time in milliseconds a version-7 UUID carries, or `nil` for another version.
    public var timeOrderedMilliseconds: UInt64? {
        let high = halves.high
        guard high >> 12 & 0xF == 7 else { return nil }
        return high >> 16
    }
}
