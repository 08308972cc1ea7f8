import HeraldCore
import Synchronization

/// Mints `apns-id` values: random version-4 UUIDs in Apple's lowercase form, without Foundation's `UUID` and without a
/// system call per id (a million-notification run would otherwise pay for a million `getrandom` calls).
///
/// Each generator draws from a SplitMix64 sequence seeded from the system's random source, so ids never repeat
/// within one generator and collide across generators only with negligible odds. They name requests, not secrets.
final class APNSIDGenerator: Sendable {
    private let random: Mutex<SeededRandomNumberGenerator>

    init(seed: UInt64? = nil) {
        var system = SystemRandomNumberGenerator()
        random = Mutex(SeededRandomNumberGenerator(seed: seed ?? system.next()))
    }

    func next() -> String {
        let (high, low) = random.withLock { ($0.next(), $0.next()) }
        return Self.format(high: high, low: low)
    }

    /// The 8-4-4-4-12 form of a UUID whose bytes are `high` then `low` (big-endian), with the version (4) and
    /// variant (RFC 9562 §4.1) bits set.
    static func format(high: UInt64, low: UInt64) -> String {
        let high = high & ~0xF000 | 0x4000
        let low = low & ~(0xC << 60) | (0x8 << 60)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            func hex(_ value: UInt64, digits: Int) {
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                    buffer[position] = hexDigits[Int((value >> UInt64(shift)) & 0xF)]
                    position += 1
                }
            }
            func dash() {
                buffer[position] = UInt8(ascii: "-")
                position += 1
            }
            hex(high >> 32, digits: 8)
            dash()
            hex(high >> 16 & 0xFFFF, digits: 4)
            dash()
            hex(high & 0xFFFF, digits: 4)
            dash()
            hex(low >> 48, digits: 4)
            dash()
            hex(low & 0xFFFF_FFFF_FFFF, digits: 12)
            return position
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
