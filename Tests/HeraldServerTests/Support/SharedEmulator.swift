import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting

@testable import HeraldServer

/// Server instances on one database that send to one running emulator, as replicas share APNs: the emulator trusts
/// a fresh signing key, and each instance has the test app with that key and its own instance id.
struct SharedEmulator: Sendable {
    let emulator: APNSEmulator
    let databaseURL: String
    let apns: APNSMode.CustomHost
    let signingKey: ProviderSigningKey

    /// Runs `body` with a started emulator for instances on `databaseURL`, and shuts the emulator down afterwards.
    static func with(databaseURL: String, _ body: (SharedEmulator) async throws -> Void) async throws {
        let signingKey = TestSigningKeys.make()
        let emulator = try APNSEmulator(
            configuration: EmulatorConfiguration(
                adminPort: nil, trustedKeys: [ProviderTokenVerifier.TrustedKey(signingKey)]))
        try await emulator.start()
        try await withCleanup({ await emulator.shutdown() }) {
            let shared = SharedEmulator(
                emulator: emulator, databaseURL: databaseURL, apns: try APNSMode.CustomHost.devicePush(of: emulator), signingKey: signingKey)
            try await body(shared)
        }
    }

    /// An instance of the server, built (not yet running).
    func instance(_ id: String, configure: (inout ServerConfiguration) -> Void = { _ in }) async throws
        -> HeraldApplication
    {
        try await ServerHarness.build(databaseURL: databaseURL, logger: nil) { configuration in
            configuration.apns = .custom(apns)
            configuration.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(signingKey))]
            configuration.instanceID = id
            configure(&configuration)
        }
    }
}
