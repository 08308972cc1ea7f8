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
        random.withLock { APNSID.randomHeaderValue(using: &$0) }
    }
}
