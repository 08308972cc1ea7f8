import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Testing

@testable import HeraldServer

extension ServerHarness {
    /// Runs `body` with a started emulator that trusts a fresh signing key and a way to build servers on one database
    /// that push to it: a test stops one server and builds the next, as a restart does. The emulator shuts down after.
    static func withRestartableServers(
        databaseURL: String, clock: ManualWallClock, configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: (APNSEmulator, () async throws -> HeraldApplication) async throws -> Void
    ) async throws {
        let key = TestSigningKeys.make()
        let emulator = try APNSEmulator(
            configuration: EmulatorConfiguration(adminPort: nil, trustedKeys: [ProviderTokenVerifier.TrustedKey(key)]))
        try await emulator.start()
        try await withCleanup({ await emulator.shutdown() }) {
            let host = APNSMode.CustomHost(
                host: "127.0.0.1", productionPort: try #require(emulator.port(for: .production)),
                developmentPort: try #require(emulator.port(for: .development)), trustPEM: emulator.certificateAuthorityPEM)
            func server() async throws -> HeraldApplication {
                try await ServerHarness.build(databaseURL: databaseURL, clock: clock, logger: nil) { configuration in
                    configuration.apns = .custom(host)
                    configuration.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                    configure(&configuration)
                }
            }
            try await body(emulator, server)
        }
    }
}
