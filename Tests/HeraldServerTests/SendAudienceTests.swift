import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// A background send goes to the devices registered when it was accepted: devices that register while it runs (a
/// campaign takes minutes) are not added to it, so its counts never pass its `targetCount`.
@Suite("Server: a send keeps to the devices registered when it was accepted", .timeLimit(.minutes(3)))
struct SendAudienceTests {
    static let count = 2_000

    @Test(
        "devices registered while a 2,000-device send runs, whole or in shards, are left out: counts equal the target",
        arguments: Backend.available, [false, true])
    func registeredMeanwhileLeftOut(_ backend: Backend, sharded: Bool) async throws {
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
            try await ServerHarness.withServer(
                backend,
                configure: {
                    DatabaseOutageTests.sendThrough(host, key: key, &$0)
                    $0.sending.shardSize = sharded ? 500 : 0
                },
                prepare: { try await TopicSends.register(Self.count, in: $0) }
            ) { client, app in
                let secret = try await SendTests.key(app)
                let id = try await TopicSends.start(client, key: secret, alert: "audience")
                await emulator.waitForCounters { $0.accepted >= 100 }
                // New tokens (33 bytes) that sort among the registered ones, in both environments and every shard.
                for n in 0..<20 {
                    let token = try DeviceToken(hex: StoreConformance.token(100 * n + 1).hex + "80")
                    try await client.register(token, debug: n % 4 < 2)
                }
                let record = try #require(try await app.store.send(id))
                #expect(record.targetCount == Self.count)
                try await TopicSends.expectEveryDeviceOnce(id, count: Self.count, app: app, emulator: emulator)
                let finished = try #require(try await app.store.send(id))
                #expect(finished.targetCount == Self.count && finished.counts.total == Self.count)
            }
        }
    }
}
