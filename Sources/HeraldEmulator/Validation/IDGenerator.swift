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
        APNSID.randomHeaderValue(using: &random)
    }
}
