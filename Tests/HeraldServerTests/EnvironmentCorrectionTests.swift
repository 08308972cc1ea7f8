import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import HeraldWebhooks
import Testing

@testable import HeraldServer

/// A background send to a topic where some devices are registered in the wrong environment: APNs refuses each with
/// `BadDeviceToken` where it is registered and accepts it in the other, and the store moves it there while the send
/// runs. The walk reaches that environment later (development first): a device it finds there was pushed already.
@Suite("Server: an environment correction pushes once", .timeLimit(.minutes(3)))
struct EnvironmentCorrectionTests {
    static let count = 5_000
    /// Devices 1…10: the even ones are production's but registered in development (corrected in the walk of
    /// development, then met again in the walk of production), the odd ones the other way round.
    static let wrong = 1...10

    @Test(
        "5,000 devices, 10 in the wrong environment: each corrected device gets one push, one outcome and one notification.accepted",
        arguments: Backend.available, [false, true])
    func correctedOnce(_ backend: Backend, sharded: Bool) async throws {
        try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
            for n in Self.wrong {
                _ = try emulator.createDevice(
                    token: StoreConformance.token(n), environment: Self.registered(n).other, topic: ServerHarness.topic)
            }
            try await WebhookReceiver.with { receiver, url in
                try await ServerHarness.withServer(
                    backend,
                    configure: {
                        $0.apns = .custom(host)
                        $0.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                        $0.webhooks.pollInterval = .milliseconds(20)
                        // Five shards of 1,000 run side by side when sharded; a whole send otherwise.
                        $0.sending.shardSize = sharded ? 1_000 : 0
                        // Smaller pages and budget: the walk reads production's pages (from device 2,501) long
                        // after development's first devices were corrected, at most 600 devices ahead of its sends
                        // (with a page of 1,000 and as many in flight, every page of 5,000 may be read before APNs's
                        // first answer, and the duplicate happens only sometimes).
                        $0.sending.pageSize = 200
                        $0.sending.maximumInFlight = 200
                    },
                    prepare: { try await TopicSends.register(Self.count, in: $0, environment: Self.registered) }
                ) { client, app in
                    let secret = try await SendTests.key(app)
                    _ = try await WebhookTests.register(
                        client, key: secret, url: url, events: ["notification.accepted", "send.completed"])
                    let id = try await TopicSends.start(client, key: secret, alert: "once")
                    try await TopicSends.expectEveryDeviceOnce(id, count: Self.count, app: app, emulator: emulator)

                    // Every corrected device: in its real environment now, one outcome that says so.
                    for n in Self.wrong {
                        let token = StoreConformance.token(n)
                        #expect(try await app.store.device(token)?.environment == Self.registered(n).other)
                    }
                    var outcomes: [DeliveryOutcome] = []
                    var cursor: OutcomeCursor?
                    repeat {
                        let page = try await app.store.outcomes(of: id, after: cursor, limit: 1_000)
                        outcomes += page.outcomes
                        cursor = page.next
                    } while cursor != nil
                    #expect(outcomes.count == Self.count)
                    #expect(Set(outcomes.map(\.token)).count == Self.count, "one outcome per device")
                    let corrected = outcomes.filter { $0.action == .environmentCorrected }
                    #expect(Set(corrected.map(\.token)) == Set(Self.wrong.map(StoreConformance.token)))

                    // One notification.accepted per device, then send.completed.
                    await receiver.accepted.wait(untilAtLeast: Self.count + 1)
                    let events = receiver.acceptedEvents.filter { $0["type"]?.stringValue == "notification.accepted" }
                    let tokens = events.compactMap { $0["data"]?["token"]?.stringValue }
                    #expect(events.count == Self.count && Set(tokens).count == Self.count, "\(events.count) events")
                }
            }
        }
    }

    /// Where device `n` is registered: its real environment, but the other one for the devices of ``wrong``.
    static func registered(_ n: Int) -> APNSEnvironment {
        let real: APNSEnvironment = n % 2 == 0 ? .production : .development
        return wrong.contains(n) ? real.other : real
    }
}
