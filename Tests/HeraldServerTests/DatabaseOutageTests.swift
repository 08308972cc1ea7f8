import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldServer

/// A server on PostgreSQL through a proxy that breaks the path to the database the ways a restart, a failover or a
/// network does (``TCPFaultProxy``), while a background send runs: the send pauses and goes on, nothing is sent twice.
@Suite("Server: a send rides through the database going away", .timeLimit(.minutes(3)))
struct DatabaseOutageTests {
    static let count = 3_000

    enum Fault: String, CaseIterable, CustomTestStringConvertible {
        /// Every connection closed and new ones refused, as while PostgreSQL restarts.
        case restart
        /// Every byte held, then delivered, as a partition that heals.
        case partition

        var testDescription: String { rawValue }
    }

    @Test(
        "a 3,000-device send through 1.5 s of the database away: completed, every device once, no failure",
        .enabled(if: testDatabaseURL != nil), arguments: Fault.allCases)
    func ridesThrough(_ fault: Fault) async throws {
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
            try await Self.withProxiedServer(
                configure: { Self.sendThrough(host, key: key, &$0) }
            ) { proxy, client, app in
                let secret = try await SendTests.key(app)
                let id = try await TopicSends.start(client, key: secret, alert: "through it")
                await emulator.waitForCounters { $0.accepted >= 300 }
                proxy.setMode(fault == .restart ? .refuse : .blackhole)
                // The fault's length, not a wait for something to happen.
                try await Task.sleep(for: .milliseconds(1_500))
                proxy.setMode(.pass)
                try await TopicSends.expectEveryDeviceOnce(id, count: Self.count, app: app, emulator: emulator)
            }
        }
    }

    @Test(
        "tokens APNs answers Unregistered while the database restarts are removed once it is back, not left to the next send",
        .enabled(if: testDatabaseURL != nil))
    func rejectionsAppliedOnReturn() async throws {
        // Every fifth device is gone from APNs: some of the 50 in flight when the database goes are among them.
        let gone = stride(from: 5, through: Self.count, by: 5).map(StoreConformance.token)
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
            try await Self.withProxiedServer(
                configure: { Self.sendThrough(host, key: key, &$0) }
            ) { proxy, client, app in
                for (n, token) in gone.enumerated() {
                    // TopicSends.register puts even devices in production, odd ones in development.
                    let environment: APNSEnvironment = (n + 1) * 5 % 2 == 0 ? .production : .development
                    _ = try emulator.createDevice(token: token, environment: environment, topic: ServerHarness.topic)
                    // Since after its registration: a token registered after APNs's timestamp would be kept.
                    try emulator.markUnregistered(token)
                }
                let secret = try await SendTests.key(app)
                let id = try await TopicSends.start(client, key: secret, alert: "gone")
                await emulator.waitForCounters { $0.accepted >= 300 }
                proxy.setMode(.refuse)
                // The fault's length, not a wait for something to happen.
                try await Task.sleep(for: .milliseconds(1_500))
                proxy.setMode(.pass)
                let finished = try await app.worker.waitUntilFinished(id)
                #expect(finished.status == .completed && finished.counts.rejected == gone.count, "\(finished)")
                var kept: [DeviceToken] = []
                for token in gone where try await app.store.device(token)?.isActive != false { kept.append(token) }
                #expect(kept.isEmpty, "\(kept.count) of \(gone.count) tokens APNs removed are still sent to")
            }
        }
    }

    @Test(
        "a server stops while its database is away, silent or refusing, in the middle of a send",
        .enabled(if: testDatabaseURL != nil), arguments: [TCPFaultProxy.Mode.silent, .refuse])
    func stopsWhileAway(_ mode: TCPFaultProxy.Mode) async throws {
        // A stop that waits for the database never ends: the suite's time limit fails it.
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
            try await Self.withProxiedServer(
                configure: {
                    Self.sendThrough(host, key: key, &$0)
                    $0.sending.shutdownGrace = .seconds(1)
                }
            ) { proxy, client, app in
                let secret = try await SendTests.key(app)
                _ = try await TopicSends.start(client, key: secret, alert: "stop")
                await emulator.waitForCounters { $0.accepted >= 300 }
                proxy.setMode(mode)
                // The server stops when this returns, with the database away.
            }
            #expect(emulator.counters.duplicateAPNSIDs == 0)
        }
    }

    /// Sends through the emulator at `host`, a whole send (no shards), pages of 100 and 50 in flight: the send is at
    /// its start when the database goes away.
    static func sendThrough(_ host: APNSMode.CustomHost, key: ProviderSigningKey, _ configuration: inout ServerConfiguration) {
        configuration.apns = .custom(host)
        configuration.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
        configuration.sending.pageSize = 100
        configuration.sending.maximumInFlight = 50
        configuration.sending.shardSize = 0
    }

    /// Runs a PostgreSQL server whose connections go through a fault proxy, with `count` devices registered.
    static func withProxiedServer(
        configure: @escaping (inout ServerConfiguration) -> Void,
        _ body: @escaping @Sendable (TCPFaultProxy, ServerClient, HeraldApplication) async throws -> Void
    ) async throws {
        let direct = try #require(testDatabaseURL)
        let components = try #require(URLComponents(string: direct))
        let proxy = try await TCPFaultProxy.start(
            upstreamHost: components.host ?? "127.0.0.1", upstreamPort: components.port ?? 5432)
        try await withCleanup({ await proxy.shutdown() }) {
            var logger = Logger(label: "herald.test")
            logger.logLevel = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"] == nil ? .warning : .info
            try await ServerHarness.withServer(
                .postgres, logger: logger,
                configure: { configuration in
                    configure(&configuration)
                    // The same database and schema, through the proxy.
                    var proxied = URLComponents(string: configuration.databaseURL)!
                    proxied.host = "127.0.0.1"
                    proxied.port = proxy.port
                    configuration.databaseURL = proxied.string!
                },
                prepare: { try await TopicSends.register(count, in: $0) }
            ) { client, app in
                try await body(proxy, client, app)
            }
        }
    }
}
