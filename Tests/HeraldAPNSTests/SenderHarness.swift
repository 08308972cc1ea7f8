import Foundation
@testable import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldTesting

/// An emulator plus a sender pointed at it, sharing one manual wall clock; backoff sleeps return at once.
struct SenderHarness {
    let clock = ManualWallClock(Date(timeIntervalSince1970: 1_767_312_000))
    let backoffClock = ManualClock(advancesAutomatically: true)
    let key = TestSigningKeys.make(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    let tokens: ProviderTokenCache
    let developmentDevice = try! DeviceToken(hex: String(repeating: "d0", count: 32))
    let productionDevice = try! DeviceToken(hex: String(repeating: "e1", count: 32))
    let voipDevice = try! DeviceToken(hex: String(repeating: "c2", count: 100))
    let unregisteredDevice = try! DeviceToken(hex: String(repeating: "a3", count: 32))
    let expiredDevice = try! DeviceToken(hex: String(repeating: "b4", count: 32))
    let unknownDevice = try! DeviceToken(hex: String(repeating: "f5", count: 32))

    /// Whether the emulator also serves broadcasts and channel management (on free ports).
    let servesChannels: Bool

    init(servesChannels: Bool = false) {
        self.servesChannels = servesChannels
        tokens = ProviderTokenCache(key: key, clock: clock)
    }

    func emulatorConfiguration(mode: EmulatorConfiguration.DeviceMode = .strict, faults: FaultConfiguration = FaultConfiguration(),
                               inbox: EmulatorConfiguration.InboxMode = .recording(capacity: 10), clientCA: String? = nil) -> EmulatorConfiguration {
        let configuration = EmulatorConfiguration(
            adminPort: nil, trustedKeys: [.init(key, bundleIDs: [APNSOutcomeTable.bundleID])], clientCertificateAuthorityPEM: clientCA,
            deviceMode: mode, inbox: inbox, faults: faults, seed: 7, clock: clock)
        return servesChannels ? configuration.servingChannels() : configuration
    }

    func clientConfiguration(_ emulator: APNSEmulator, environment: APNSEnvironment = .development, credentials: APNSCredentials? = nil,
                             maximumConnections: Int = 2, requestTimeout: Duration = .seconds(30),
                             retry: RetryPolicy = RetryPolicy(initialBackoff: .milliseconds(100))) -> APNSClientConfiguration {
        APNSClientConfiguration(
            destination: .custom(host: "127.0.0.1", port: emulator.port(for: environment)!, environment: environment),
            credentials: credentials ?? .token(tokens), trust: .only(certificatesPEM: emulator.certificateAuthorityPEM!),
            maximumConnections: maximumConnections, requestTimeout: requestTimeout, retry: retry,
            broadcastDestination: emulator.port(for: environment, service: .broadcast).map {
                .custom(host: "127.0.0.1", port: $0, environment: environment)
            },
            channelManagementDestination: emulator.port(for: environment, service: .channelManagement).map {
                .custom(host: "127.0.0.1", port: $0, environment: environment)
            })
    }

    /// Runs an emulator with the outcome table's devices and a client against it.
    /// - Parameter clock: what the client's backoff and retry window run on; ``backoffClock`` by default.
    func run<T: Sendable>(
        emulator configuration: EmulatorConfiguration? = nil,
        client: ((APNSEmulator) -> APNSClientConfiguration)? = nil,
        clock: (any Clock<Duration>)? = nil,
        _ body: (APNSEmulator, APNSClient) async throws -> T
    ) async throws -> T {
        try await APNSEmulator.withRunning(configuration ?? emulatorConfiguration()) { emulator in
            let app = APNSOutcomeTable.bundleID
            _ = try emulator.createDevice(token: developmentDevice, environment: .development, topic: app)
            _ = try emulator.createDevice(token: productionDevice, environment: .production, topic: app)
            _ = try emulator.createDevice(token: voipDevice, environment: .development, topic: app + ".voip")
            _ = try emulator.createDevice(token: unregisteredDevice, environment: .development, topic: app)
            try emulator.markUnregistered(unregisteredDevice, at: Date(timeIntervalSince1970: Double(APNSOutcomeTable.unregisteredAtMilliseconds) / 1000))
            _ = try emulator.createDevice(token: expiredDevice, environment: .development, topic: app)
            try emulator.markExpired(expiredDevice)
            let clientConfiguration = client?(emulator) ?? clientConfiguration(emulator)
            return try await APNSClient.withClient(configuration: clientConfiguration, clock: clock ?? backoffClock, randomSeed: 11) { client in
                try await body(emulator, client)
            }
        }
    }

    func alert(_ text: String = "Hello", topic: String = APNSOutcomeTable.bundleID) -> PreparedNotification {
        try! PushNotification(Payload(aps: APS(alert: .body(text))), topic: topic).prepare()
    }
}
