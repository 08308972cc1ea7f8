import HeraldCore
import HeraldEmulator
import HeraldTesting

@testable import HeraldServer

/// An emulator that trusts a fresh signing key, running for the duration of a test's body, with the device-push host a
/// server configured with `.custom(host)` and that key sends to.
enum TrustingEmulator {
    static func with(
        inbox: EmulatorConfiguration.InboxMode = .recording(capacity: 100), faults: FaultConfiguration,
        _ body: (_ key: ProviderSigningKey, _ emulator: APNSEmulator, _ host: APNSMode.CustomHost) async throws -> Void
    ) async throws {
        let key = TestSigningKeys.make()
        let emulator = try APNSEmulator(
            configuration: EmulatorConfiguration(
                adminPort: nil, trustedKeys: [ProviderTokenVerifier.TrustedKey(key)], inbox: inbox, faults: faults))
        try await emulator.start()
        try await withCleanup({ await emulator.shutdown() }) {
            try await body(key, emulator, try APNSMode.CustomHost.devicePush(of: emulator))
        }
    }
}
