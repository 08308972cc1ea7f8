import Foundation
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

/// What a crash in the middle of a background send costs, on a real store and without HTTP: re-sends bounded by the
/// in-flight limit, and one apns-id per device across runs and instances.
@Suite("Engine: crashes mid-send", .timeLimit(.minutes(2)))
struct SendCrashTests {
    static let app = "com.example.app"

    @Test(
        "kill -9 mid-send: at most the in-flight limit of devices is sent twice, each time with the same apns-id",
        arguments: Backend.available)
    func crashBound(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            let tokens = try await EngineTesting.registerDevices(1...120, of: Self.app, in: store)
            let send = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
            let plan = try EngineTesting.alertToEveryDevice(of: Self.app, send: send.id)
            let limit = 8

            // The first run: 60 answers, then APNs goes quiet and the process dies with `limit` notifications held.
            let first = StallingSender(answering: 60)
            let run = Task { try await EngineTesting.fanOut(store, first, maximumInFlight: limit).run(
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
            let result = try await EngineTesting.fanOut(store, second, maximumInFlight: limit).run(
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
            let tokens = try await EngineTesting.registerDevices(1...90, of: Self.app, in: store)
            let send = try await store.createSend(
                NewSend(target: "topic", summary: "alert", job: "{}", targetCount: 90, lane: .campaign))
            _ = try await store.claimNextQueuedSend(worker: "a/1/x", leaseUntil: Date().addingTimeInterval(60))
            let query = DeviceQuery.topic(Self.app)
            let boundaries = try await store.shardBoundaries(matching: query, size: 30, limit: 10)
            #expect(try await store.shardSend(send.id, worker: "a/1/x", boundaries: boundaries, size: 30, targetCount: 90))
            let plan = try EngineTesting.alertToEveryDevice(of: Self.app, send: send.id)
            let limit = 6

            // Instance a takes a shard (its lease runs out at once, as a dead instance's does), answers 10, and dies
            // with `limit` held.
            let taken = try #require(
                try await store.claimShard(
                    worker: "a/1/x", leaseUntil: Date().addingTimeInterval(-1), lanes: [.campaign], excluding: []))
            let first = StallingSender(answering: 10)
            let lease = FanOut.Lease(worker: "a/1/x", duration: .seconds(600), shard: taken.shard.index)
            let run = Task { try await EngineTesting.fanOut(store, first, maximumInFlight: limit).run(
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
            let result = try await EngineTesting.fanOut(store, second, maximumInFlight: limit).run(
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
}
