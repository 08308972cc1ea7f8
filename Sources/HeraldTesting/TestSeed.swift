public import HeraldCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The seed of a test's random choices, printed so that a failure can be repeated.
///
/// `HERALD_TEST_SEED` (a decimal number) repeats a run's choices; without it each run draws a new seed.
public enum TestSeed {
    /// A generator for the test `name`, seeded from `HERALD_TEST_SEED` or a new seed; prints the seed either way.
    public static func generator(for name: String) -> SeededRandomNumberGenerator {
        let given = getenv("HERALD_TEST_SEED").flatMap { UInt64(String(cString: $0)) }
        let seed = given ?? UInt64.random(in: 0...UInt64.max)
        print("\(name): random seed \(seed) (HERALD_TEST_SEED=\(seed) repeats it)")
        return SeededRandomNumberGenerator(seed: seed)
    }
}
