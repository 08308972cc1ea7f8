import Crypto
import Foundation
import HeraldCore
@testable import HeraldEmulator
import HeraldTesting

/// A strict emulator with the outcome table's devices and keys, on a manual clock.
struct EmulatorFixture {
    static let start = Date(timeIntervalSince1970: 1_767_312_000)  // 2026-01-02T00:00:00Z
    let clock = ManualWallClock(start)
    let key = TestSigningKeys.make(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    let untrustedKey = TestSigningKeys.make(keyID: "ZZZ999YYYX", teamID: "DEF123GHIJ")
    let developmentDevice = try! DeviceToken(hex: String(repeating: "d0", count: 32))
    let productionDevice = try! DeviceToken(hex: String(repeating: "e1", count: 32))
    let voipDevice = try! DeviceToken(hex: String(repeating: "c2", count: 100))
    let unregisteredDevice = try! DeviceToken(hex: String(repeating: "a3", count: 32))
    let expiredDevice = try! DeviceToken(hex: String(repeating: "b4", count: 32))
    let unknownDevice = try! DeviceToken(hex: String(repeating: "f5", count: 32))

    func configuration(mode: EmulatorConfiguration.DeviceMode = .strict, inbox: EmulatorConfiguration.InboxMode = .recording(capacity: 10),
                       faults: FaultConfiguration = FaultConfiguration(), extraKeys: [ProviderTokenVerifier.TrustedKey] = [],
                       clientCA: String? = nil) -> EmulatorConfiguration {
        EmulatorConfiguration(
            adminPort: 0, trustedKeys: [.init(key, bundleIDs: [APNSOutcomeTable.bundleID])] + extraKeys,
            clientCertificateAuthorityPEM: clientCA, deviceMode: mode, maxConcurrentStreams: 1000, inbox: inbox,
            faults: faults, clock: clock)
    }

    /// Starts an emulator with the table's devices and runs `body`.
    func run<T: Sendable>(_ configuration: EmulatorConfiguration? = nil, _ body: (APNSEmulator) async throws -> T) async throws -> T {
        try await APNSEmulator.withRunning(configuration ?? self.configuration()) { emulator in
            let app = APNSOutcomeTable.bundleID
            _ = try emulator.createDevice(token: developmentDevice, environment: .development, topic: app)
            _ = try emulator.createDevice(token: productionDevice, environment: .production, topic: app)
            _ = try emulator.createDevice(token: voipDevice, environment: .development, topic: app + ".voip")
            _ = try emulator.createDevice(token: unregisteredDevice, environment: .development, topic: app)
            try emulator.markUnregistered(unregisteredDevice, at: Date(timeIntervalSince1970: Double(APNSOutcomeTable.unregisteredAtMilliseconds) / 1000))
            _ = try emulator.createDevice(token: expiredDevice, environment: .development, topic: app)
            try emulator.markExpired(expiredDevice)
            return try await body(emulator)
        }
    }

    func connect(_ emulator: APNSEmulator, _ environment: APNSEnvironment = .development,
                 certificate: LocalCertificateAuthority.Issued? = nil) async throws -> HTTP2TestClient {
        try await HTTP2TestClient.connect(
            port: emulator.port(for: environment)!, trustRootPEM: emulator.certificateAuthorityPEM!,
            clientCertificatePEM: certificate?.certificatePEM, clientKeyPEM: certificate?.privateKeyPEM)
    }

    /// The fixture key's token, reused as a well-behaved sender does (a new signature would be a new token).
    var bearer: String { tokens.currentToken().authorizationHeader }
    let tokens: ProviderTokenCache

    init() { tokens = ProviderTokenCache(key: key, clock: clock) }

    /// A newly signed token: another key's, or a fresh one of the fixture key.
    func freshBearer(_ key: ProviderSigningKey? = nil, issuedAt: Date? = nil) -> String {
        (key ?? self.key).signToken(issuedAt: issuedAt ?? clock.now()).authorizationHeader
    }

    func path(for target: APNSOutcomeTable.Target) -> String {
        switch target {
        case .developmentDevice: "/3/device/" + developmentDevice.hex
        case .productionDeviceOnDevelopment: "/3/device/" + productionDevice.hex
        case .voipDevice: "/3/device/" + voipDevice.hex
        case .unregisteredDevice: "/3/device/" + unregisteredDevice.hex
        case .expiredDevice: "/3/device/" + expiredDevice.hex
        case .unknownToken: "/3/device/" + unknownDevice.hex
        case .rawToken(let text): "/3/device/" + text
        case .rawPath(let path): path
        }
    }

    /// Sends one outcome-table case as a raw request.
    func send(_ testCase: APNSOutcomeTable.Case, on client: HTTP2TestClient) async throws -> HTTP2TestClient.Response {
        var headers = [(String, String)]()
        switch testCase.authorization {
        case .valid: headers.append(("authorization", bearer))
        case .missing: break
        case .garbage: headers.append(("authorization", "bearer not.a.jwt"))
        case .expired: headers.append(("authorization", freshBearer(issuedAt: clock.now().addingTimeInterval(-3601))))
        case .unknownKey: headers.append(("authorization", freshBearer(untrustedKey)))
        }
        let merged = testCase.requestHeaders
        for (name, value) in merged.sorted(by: { $0.key < $1.key }) {
            if let value { headers.append((name, value)) }
        }
        if let duplicated = testCase.duplicatedHeader, let value = merged[duplicated] ?? nil { headers.append((duplicated, value)) }
        return try await client.send(
            method: testCase.method, path: path(for: testCase.target), headers: headers, body: testCase.body.bytes)
    }

    func alert(_ text: String = "Hello", extra: [(String, String)] = []) -> (headers: [(String, String)], body: [UInt8]) {
        ([("authorization", bearer), ("apns-topic", APNSOutcomeTable.bundleID), ("apns-push-type", "alert")] + extra,
         Array(#"{"aps":{"alert":"\#(text)"}}"#.utf8))
    }
}
