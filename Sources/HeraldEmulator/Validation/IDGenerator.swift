import HeraldCore

/// Mints `apns-id` and `apns-unique-id` values: random version-4 UUIDs in APNs' lowercase form.
///
/// One generator per connection, seeded once from the system's generator: Foundation's `UUID()` asks the kernel
/// for randomness on every call, and the emulator answers tens of thousands of requests a second.
struct IDGenerator {
    private var random: SeededRandomNumberGenerator

    init(seed: UInt64 = UInt64.random(in: .min ... .max)) {
        random = SeededRandomNumberGenerator(seed: seed)
    }

    mutating func next() -> String {
        let high = random.next() & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let low = random.next() & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var index = 0
            func put(_ value: UInt64, nibbles: ClosedRange<Int>) {
                for nibble in nibbles.reversed() {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        buffer[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    buffer[index] = digits.utf8Start[Int(value >> UInt64(nibble * 4) & 0xF)]
                    index += 1
                }
            }
            put(high, nibbles: 0...15)
            put(low, nibbles: 0...15)
            return 36
        }
    }
}
