import Foundation
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import HeraldServer

/// What a crash in the middle of a background send costs: re-sends bounded by the in-flight limit, one apns-id per
/// device across runs, and a restarted SQLite server that resumes at once.
@Suite("Sends: crashes and restarts", .timeLimit(.minutes(2)))
struct SendCrashTests {
    /// A sender that answers the first `answering` notifications and then holds every later one until its task is
    /// cancelled (the process dies): what a send looks like when `kill -9` arrives. ``release()`` lets the held ones
    /// (and any later ones) through, accepted.
    final class StallingSender: PushSender {
        let answering: Int
        /// How many notifications are held, unanswered.
        let held = CountSignal()
        private let log = Mutex<(sent: [(token: DeviceToken, apnsID: APNSID?)], held: Int)>(([], 0))
        private let released = Gate()

        init(answering: Int) { self.answering = answering }

        var sent: [(token: DeviceToken, apnsID: APNSID?)] { log.withLock { $0.sent } }

        /// Answers the held notifications, and every later one, at once.
        func release() { released.open() }

        func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment) async
            -> PushResult
        {
            let (number, heldNow) = log.withLock { log in
                log.sent.append((token, notification.apnsID))
                if log.sent.count > answering { log.held += 1 }
                return (log.sent.count, log.held)
            }
            if number <= answering { return PushResult(.accepted(apnsID: notification.apnsID ?? APNSID())) }
            held.update(heldNow)
            // Held until released, or until the run is cancelled (the process died, or the send was cancelled): then
            // as a sender over APNs answers, with no outcome.
            await released.wait()
            if Task.isCancelled { return .cancelled("cancelled while APNs held it") }
            return PushResult(.accepted(apnsID: notification.apnsID ?? APNSID()))
        }
    }

    static func fanOut(_ store: any Store, _ sender: any PushSender, maximumInFlight: Int) -> FanOut {
        let clock = SystemWallClock()
        let delivery = Delivery(
            store: store, sender: sender, metrics: ServerMetrics(registry: ServerDependencies().metrics),
            logger: Logger(label: "herald.test.crash"), clock: clock)
        return FanOut(store: store, delivery: delivery, pageSize: 50, maximumInFlight: maximumInFlight, clock: clock)
    }

    /// A broadcaster with no APNs client: these tests queue no broadcast.
    static func noBroadcasts(_ store: any Store) -> Broadcaster {
        Broadcaster(
            store: store, client: { _, _ in nil }, metrics: ServerMetrics(registry: ServerDependencies().metrics))
    }

    @Test(
        "kill -9 mid-send: at most the in-flight limit of devices is sent twice, each time with the same apns-id",
        arguments: Backend.available)
    func crashBound(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            let tokens = (1...120).map { StoreConformance.token($0) }
            for token in tokens {
                _ = try await store.upsert(
                    TokenRegistration(token: token, topic: ServerHarness.topic, environment: .production))
            }
            let apps = AppDirectory(ServerHarness.configuration(databaseURL: "sqlite://unused").apps)
            let send = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
            let plan = try SendPlan(
                SendRequest(target: .everyDevice, topic: ServerHarness.topic, content: .typed(Payload(aps: APS(alert: .body("hi"))))),
                apps: apps, sendID: send.id, at: Date())
            let limit = 8

            // The first run: 60 answers, then APNs goes quiet and the process dies with `limit` notifications held.
            let first = StallingSender(answering: 60)
            let run = Task { try await Self.fanOut(store, first, maximumInFlight: limit).run(
                plan, send: send.id, createdAt: send.createdAt, after: nil, lease: nil, collect: false) }
            await first.held.wait(untilAtLeast: limit)
            let sentBeforeCrash = Set(first.sent.map(\.token))
            let recorded = try await store.tokensWithOutcomes(of: send.id, among: tokens)
            let atRisk = sentBeforeCrash.subtracting(recorded)
            #expect(
                atRisk.count <= limit,
                "sent but not recorded when the process died: \(atRisk.count), more than the \(limit) in flight")
            run.cancel()
            _ = try? await run.value

            // The restarted run resumes from what is stored.
            let stored = try #require(try await store.send(send.id))
            let second = StallingSender(answering: .max)
            let result = try await Self.fanOut(store, second, maximumInFlight: limit).run(
                plan, send: send.id, createdAt: send.createdAt, after: stored.checkpoint, resuming: stored.counts.total > 0, lease: nil,
                collect: false)
            #expect(result.finished)
            let resent = Set(second.sent.map(\.token)).intersection(sentBeforeCrash)
            #expect(resent.count <= limit, "devices sent twice: \(resent.count)")
            #expect(
                Set(first.sent.map(\.token)).union(second.sent.map(\.token)) == Set(tokens), "every device was sent")
            #expect(result.counts.total == tokens.count, "one outcome per device: \(result.counts)")

            var ids: [DeviceToken: Set<APNSID?>] = [:]
            for (token, id) in first.sent + second.sent { ids[token, default: []].insert(id) }
            #expect(ids.values.allSatisfy { $0.count == 1 }, "one apns-id per device across both runs")
            #expect(
                second.sent.allSatisfy { $0.apnsID == FanOut.apnsID(send: send.id, token: $0.token) },
                "the id is derived from the send and the token")
        }
    }

    @Test(
        "kill -9 of one of two instances mid-shard: the other takes the shard over after its checkpoint, sending at most the in-flight limit twice, with the same apns-ids",
        arguments: Backend.available)
    func shardCrashBound(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            let tokens = (1...90).map { StoreConformance.token($0) }
            for token in tokens {
                _ = try await store.upsert(
                    TokenRegistration(token: token, topic: ServerHarness.topic, environment: .production))
            }
            let apps = AppDirectory(ServerHarness.configuration(databaseURL: "sqlite://unused").apps)
            let send = try await store.createSend(
                NewSend(target: "topic", summary: "alert", job: "{}", targetCount: 90, lane: .campaign))
            _ = try await store.claimNextQueuedSend(worker: "a/1/x", leaseUntil: Date().addingTimeInterval(60))
            let query = DeviceQuery.topic(ServerHarness.topic)
            let boundaries = try await store.shardBoundaries(matching: query, size: 30, limit: 10)
            #expect(try await store.shardSend(send.id, worker: "a/1/x", boundaries: boundaries, size: 30, targetCount: 90))
            let plan = try SendPlan(
                SendRequest(target: .everyDevice, topic: ServerHarness.topic, content: .typed(Payload(aps: APS(alert: .body("hi"))))),
                apps: apps, sendID: send.id, at: Date())
            let limit = 6

            // Instance a takes a shard (its lease runs out at once, as a dead instance's does), answers 10, and dies
            // with `limit` held.
            let taken = try #require(
                try await store.claimShard(
                    worker: "a/1/x", leaseUntil: Date().addingTimeInterval(-1), lanes: [.campaign], excluding: []))
            let first = StallingSender(answering: 10)
            let lease = FanOut.Lease(worker: "a/1/x", duration: .seconds(600), shard: taken.shard.index)
            let run = Task { try await Self.fanOut(store, first, maximumInFlight: limit).run(
                plan.bounded(through: taken.shard.through), send: send.id, createdAt: send.createdAt, after: taken.shard.after, lease: lease,
                collect: false) }
            await first.held.wait(untilAtLeast: limit)
            let sentBeforeCrash = Set(first.sent.map(\.token))
            run.cancel()
            _ = try? await run.value

            // Instance b takes the shard whose lease ran out first, and resumes it: what a recorded is skipped.
            let resumed = try #require(
                try await store.claimShard(
                    worker: "b/1/y", leaseUntil: Date().addingTimeInterval(60), lanes: [.campaign], excluding: [])
            ).shard
            #expect(resumed.index == taken.shard.index && resumed.recorded > 0, "what a recorded before it died stays")
            let second = StallingSender(answering: .max)
            let result = try await Self.fanOut(store, second, maximumInFlight: limit).run(
                plan.bounded(through: resumed.through), send: send.id, createdAt: send.createdAt, after: resumed.resumesAfter, resuming: true,
                lease: FanOut.Lease(worker: "b/1/y", duration: .seconds(600), shard: resumed.index), collect: false)
            #expect(result.finished)
            let resent = Set(second.sent.map(\.token)).intersection(sentBeforeCrash)
            #expect(resent.count <= limit, "devices sent twice: \(resent.count)")
            let shardTokens = try await store.devices(
                matching: query.through(resumed.through), after: resumed.after, limit: 100
            ).devices.map(\.token)
            #expect(sentBeforeCrash.union(second.sent.map(\.token)) == Set(shardTokens), "every device of the shard")
            var ids: [DeviceToken: Set<APNSID?>] = [:]
            for (token, id) in first.sent + second.sent { ids[token, default: []].insert(id) }
            #expect(ids.values.allSatisfy { $0.count == 1 }, "one apns-id per device across both instances")
            #expect(
                try await store.tokensWithOutcomes(of: send.id, among: tokens).count == 30,
                "one outcome per device of the shard")
        }
    }

    @Test("a device's apns-id is the version-5 UUID of its token in the send's namespace, as any tool computes it")
    func apnsIDIsNameBased() throws {
        let send = try #require(SendID("5a0e7c4e-1f2b-4c3d-9e8f-0123456789ab"))
        // python3 -c "import uuid; print(uuid.uuid5(uuid.UUID('5a0e7c4e-…'), '00…2a'))"
        #expect(
            FanOut.apnsID(send: send, token: StoreConformance.token(42)).headerValue
                == "9262a9d4-f3ef-5f38-94c8-6227ddff90a5")
        #expect(FanOut.apnsID(send: SendID(), token: StoreConformance.token(42)) != FanOut.apnsID(send: send, token: StoreConformance.token(42)))
    }

    @Test("a restarted SQLite server resumes the send its killed predecessor held at once, not when the lease runs out")
    func restartResumesAtOnce() async throws {
        let clock = ManualWallClock()
        let tokens = (1...6).map { testToken(0x70 + $0) }
        let sendID = SendID()
        try await ServerHarness.withServer(
            .sqlite, clock: clock,
            prepare: { store in
                for token in tokens {
                    _ = try await store.upsert(
                        TokenRegistration(token: token, topic: ServerHarness.topic, environment: .development))
                }
                let job = #"{"target": {"topic": "com.example.app"}, "topic": "com.example.app", "alert": "resumed"}"#
                _ = try await store.createSend(
                    NewSend(id: sendID, target: "every device", summary: "alert push", job: job, targetCount: 6))
                // The previous run of this server claimed it for two minutes, recorded two devices, and was killed.
                _ = try #require(
                    try await store.claimNextQueuedSend(
                        worker: "host/1234/dead", leaseUntil: clock.now().addingTimeInterval(120)))
                let firstTwo = try await store.devices(matching: .topic(ServerHarness.topic), after: nil, limit: 2)
                let outcomes = firstTwo.devices.map {
                    DeliveryOutcome(
                        token: $0.token, environment: .development, result: .accepted(apnsID: APNSID()), at: clock.now()
                    )
                }
                _ = try await store.recordOutcomes(outcomes, for: sendID, checkpoint: nil)
            }
        ) { client, app in
            // The clock never moves: the old lease holds for the whole test.
            let record = try await app.worker.waitUntilFinished(sendID)
            #expect(record.status == .completed && record.counts.accepted == 6)
            let received = try tokens.map {
                app.emulator!.device($0) == nil ? 0 : try app.emulator!.inbox(for: $0).count
            }
            #expect(received == [0, 0, 1, 1, 1, 1], "the two recorded before the crash are not sent again")
        }
    }
}
