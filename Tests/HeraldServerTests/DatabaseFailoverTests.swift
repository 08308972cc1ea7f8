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

/// A failover as managed PostgreSQL does it: the primary crashes in the middle of a send, and its streaming standby is
/// promoted a moment later. Herald, given both hosts (`postgres://…@primary,standby/db?target_session_attrs=read-write`),
/// follows the new primary: the send completes with every device once, and every registration answered `201` during
/// the failover is on the new primary.
@Suite("Server: a send rides through a PostgreSQL failover", .timeLimit(.minutes(3)))
struct DatabaseFailoverTests {
    static let count = 3_000

    @Test(
        "a 3,000-device send through a primary crash and the promotion of its standby: completed, every device once, every acknowledged registration kept",
        .enabled(if: testDatabaseURL != nil && PostgresReplicaPair.binaries != nil))
    func followsThePromotedStandby() async throws {
        let pair = try await PostgresReplicaPair.start()
        defer { pair.shutdown() }
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
            var logger = Logger(label: "herald.test")
            logger.logLevel = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"] == nil ? .warning : .info
            try await ServerHarness.withServer(
                .postgres, logger: logger,
                configure: { configuration in
                    DatabaseOutageTests.sendThrough(host, key: key, &configuration)
                    configuration.databaseURL = pair.url(
                        options: "sslmode=disable&schema=herald_failover&pool=5&target_session_attrs=read-write")
                }
            ) { client, app in
                try await TopicSends.register(Self.count, in: app.store)
                let secret = try await SendTests.key(app)
                let id = try await TopicSends.start(client, key: secret, alert: "failover")
                await emulator.waitForCounters { $0.accepted >= 300 }
                try await pair.crashPrimary()
                // Registrations while there is no primary, and after the promotion: whatever is answered 201 must be on
                // the new primary.
                let tokens = try await withThrowingTaskGroup(of: [DeviceToken].self) { group in
                    group.addTask {
                        var acknowledged: [DeviceToken] = []
                        for n in 0..<40 {
                            let token = Self.registeredDuringFailover(n)
                            let answer = try await client.call(
                                .post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": false}"#)
                            if answer.status == .created { acknowledged.append(token) }
                            #expect(
                                [.created, .serviceUnavailable].contains(answer.status),
                                "a registration during a failover is stored or refused with 503: \(answer)")
                            try await Task.sleep(for: .milliseconds(100))
                        }
                        return acknowledged
                    }
                    // A managed database promotes its standby some time after the primary is lost.
                    try await Task.sleep(for: .seconds(1))
                    try await pair.promoteStandby()
                    return try await group.next() ?? []
                }
                try await TopicSends.expectEveryDeviceOnce(id, count: Self.count, app: app, emulator: emulator)
                let stored = Set(
                    try await pair.queryStandby("SELECT token FROM herald_failover.devices").split(separator: "\n")
                        .map(String.init))
                #expect(!tokens.isEmpty, "some registrations were answered 201 once the standby was promoted")
                #expect(tokens.filter { !stored.contains($0.hex) } == [], "every registration answered 201 is kept")
            }
        }
    }

    /// A token of its own for the `n`th registration made during the failover.
    static func registeredDuringFailover(_ n: Int) -> DeviceToken {
        try! DeviceToken(hex: "fa11" + String(format: "%060x", n))
    }
}
