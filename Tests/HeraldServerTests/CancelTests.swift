import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// `DELETE /api/sends/{id}`: a queued send never starts; a running one stops at once, keeps what APNs answered, gives
/// the devices whose requests it cancelled no outcome (not a failure), and is never resumed.
@Suite("Sends: cancellation", .timeLimit(.minutes(3)))
struct CancelTests {
    /// A worker over a store and a sender, as `herald serve` builds it, with polls that never come during a test.
    static func worker(
        _ store: any Store, _ sender: any PushSender, maximumInFlight: Int, shutdownGrace: Duration = .seconds(5)
    ) -> SendWorker {
        var sending = ServerConfiguration.Sending(pageSize: 50, maximumInFlight: maximumInFlight)
        sending.pollInterval = .seconds(3600)
        sending.shutdownGrace = shutdownGrace
        let ready = Gate()
        ready.open()
        return SendWorker(
            store: store, servedApps: [ServerHarness.topic],
            legacyJobs: RequestBodyJobs(apps: AppDirectory([AppConfiguration(bundleID: ServerHarness.topic)]), store: store),
            fanOut: EngineTesting.fanOut(store, sender, maximumInFlight: maximumInFlight),
            broadcaster: EngineTesting.noBroadcasts(store), sending: sending,
            instance: "cancel-test",
            clock: ContinuousClock(), wallClock: SystemWallClock(), storeReady: ready,
            logger: Logger(label: "herald.test.cancel"))
    }

    /// Registers `count` production devices tagged `all`.
    static func registerTagged(_ count: Int, in store: any Store) async throws {
        for n in 1...count {
            _ = try await store.upsert(
                TokenRegistration(
                    token: StoreConformance.token(n), topic: ServerHarness.topic, environment: .production,
                    tags: ["all"]))
        }
    }

    static func queue(_ store: any Store, target: String, count: Int) async throws -> SendRecord {
        let job = #"{"target": \#(target), "topic": "\#(ServerHarness.topic)", "alert": "hi"}"#
        return try await store.createSend(NewSend(target: target, summary: "alert push", job: job, targetCount: count))
    }

    @Test(
        "a running send stops without waiting for what APNs holds: what was answered is recorded, the held requests are cancelled and recorded as nothing, nothing more is sent, and a restarted worker never resumes it",
        arguments: Backend.available)
    func running(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            try await Self.registerTagged(120, in: store)
            _ = try await store.upsert(
                TokenRegistration(
                    token: StoreConformance.token(500), topic: ServerHarness.topic, environment: .production,
                    userID: "later"))
            let send = try await Self.queue(store, target: #"{"tag": "all"}"#, count: 120)
            let limit = 8
            let sender = StallingSender(answering: 20)
            let worker = Self.worker(store, sender, maximumInFlight: limit)
            let run = Task { try await worker.run() }
            worker.wake()
            // 20 answered and recorded, 8 in flight and held: the send is running.
            await sender.held.wait(untilAtLeast: limit)
            #expect(try await store.send(send.id)?.status == .running)

            let cancelled = try #require(try await store.cancelSend(send.id))
            worker.cancelled(send.id)
            #expect(cancelled.status == .cancelled)
            // The sender still holds its 8: the send ends anyway.
            let stopped = try await worker.waitUntilFinished(send.id)
            sender.release()
            #expect(stopped.status == .cancelled && stopped.worker == nil && stopped.leaseUntil == nil)
            #expect(sender.sent.count == 20 + limit, "nothing was sent after the cancellation but what was in flight")
            #expect(
                stopped.counts.accepted == 20 && stopped.counts.total == 20,
                "what was answered is recorded; the \(limit) cancelled in flight have no outcome, not a failure: \(stopped.counts)")
            #expect(stopped.message?.contains("Cancelled while sending") == true, "\(stopped.message ?? "")")
            run.cancel()
            _ = try? await run.value

            // Another start: the worker puts back what an earlier run left and claims what waits; never this send.
            let second = StallingSender(answering: .max)
            let restarted = Self.worker(store, second, maximumInFlight: limit)
            let rerun = Task { try await restarted.run() }
            let later = try await Self.queue(store, target: #"{"user": "later"}"#, count: 1)
            restarted.wake()
            #expect(try await restarted.waitUntilFinished(later.id).status == .completed)
            #expect(second.sent.map(\.token) == [StoreConformance.token(500)], "only the later send's device")
            let after = try #require(try await store.send(send.id))
            #expect(after.status == .cancelled && after.counts == stopped.counts)
            rerun.cancel()
            _ = try? await rerun.value
        }
    }

    @Test(
        "a graceful shutdown does not wait for what APNs holds past its grace: the held requests are cancelled, the send goes back to the queue, and the next start sends them with the same apns-ids",
        arguments: Backend.available)
    func shutdownDuringHeldRequests(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            try await Self.registerTagged(60, in: store)
            let send = try await Self.queue(store, target: #"{"tag": "all"}"#, count: 60)
            let limit = 8
            let sender = StallingSender(answering: 20)
            // No grace: the shutdown cancels what is in flight as soon as it begins.
            let worker = Self.worker(store, sender, maximumInFlight: limit, shutdownGrace: .zero)
            let group = ServiceGroup(services: [worker], logger: ServerHarness.quietLogger())
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                worker.wake()
                await sender.held.wait(untilAtLeast: limit)
                // Ends while the sender still holds its 8.
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            sender.release()
            let paused = try #require(try await store.send(send.id))
            #expect(paused.status == .queued && paused.worker == nil, "\(paused)")
            #expect(
                paused.counts.accepted == 20 && paused.counts.total == 20,
                "what was answered is recorded; the \(limit) cancelled have no outcome, not a failure: \(paused.counts)")

            let second = StallingSender(answering: .max)
            let restarted = Self.worker(store, second, maximumInFlight: limit)
            let rerun = Task { try await restarted.run() }
            restarted.wake()
            let finished = try await restarted.waitUntilFinished(send.id)
            #expect(finished.status == .completed && finished.counts.accepted == 60, "\(finished.counts)")
            let resent = Set(second.sent.map(\.token)).intersection(sender.sent.map(\.token))
            #expect(resent.count == limit, "only the cancelled requests are sent again: \(resent.count)")
            var ids: [DeviceToken: Set<APNSID?>] = [:]
            for (token, id) in sender.sent + second.sent { ids[token, default: []].insert(id) }
            #expect(ids.values.allSatisfy { $0.count == 1 }, "one apns-id per device across both runs")
            rerun.cancel()
            _ = try? await rerun.value
        }
    }

    @Test(
        "a send whose requests APNs holds is cancelled at once through the API, whole or in shards: the held devices get no outcome and their streams are reset",
        arguments: Backend.available, [false, true])
    func heldByAPNs(backend: Backend, sharded: Bool) async throws {
        let count = 30
        try await ServerHarness.withServer(
            backend,
            configure: {
                $0.limits.inlineSendLimit = 0
                // Three shards of 10, run side by side (as several instances, or a worker allowed three, run them).
                if sharded {
                    $0.sending.shardSize = 10
                    $0.sending.shardRunsPerSend = 3
                }
            }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            for n in 1...count { try await client.register(testToken(n), debug: true, extra: #", "tags": ["held"]"#) }
            // APNs takes every request and never answers: only the cancellation can end the send.
            try emulator.setFaults(FaultConfiguration(noResponseProbability: 1))
            let answer = try await client.call(
                .post, "/api/send", body: #"{"target": {"tag": "held"}, "alert": "held"}"#, bearer: key)
            #expect(answer.status == .accepted, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            await emulator.waitForCounters { $0.faults["noResponse", default: 0] >= count }

            let cancelled = try await client.call(.delete, "/api/sends/\(id)", bearer: key)
            #expect(cancelled.status == .ok, "\(cancelled)")
            // Every run of the send (each shard's) has ended, with APNs still holding every answer.
            await app.worker.waitUntilIdle()
            let stopped = try await app.worker.waitUntilFinished(id)
            #expect(stopped.shardCount == (sharded ? 3 : nil), "\(stopped)")
            #expect(stopped.status == .cancelled && stopped.worker == nil, "\(stopped)")
            #expect(stopped.counts.total == 0 && stopped.counts.failed == 0, "nothing recorded, no failure: \(stopped.counts)")
            let status = try await client.call(.get, "/api/sends/\(id)", bearer: key)
            #expect(status.json["status"] == "cancelled" && status.json["outcomes"] == [], "\(status)")
            await emulator.waitForCounters { $0.clientResets >= count }
            #expect(emulator.counters.clientResets == count, "each held request's stream was reset once")
            #expect(emulator.counters.accepted == 0)
            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains("herald_notifications_cancelled_total \(count)\n"),
                "\(metrics.body.split(separator: "\n").filter { $0.contains("cancelled") })")
        }
    }

    @Test(
        "a broadcast sent at once whose request is cancelled while APNs holds it is recorded cancelled with no outcome, not failed, and counted",
        arguments: Backend.available)
    func inlineBroadcastHeldByAPNs(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let created = try await client.call(.post, "/api/channels", body: #"{"environment": "production"}"#, bearer: key)
            let channelID = try #require(created.json["channel"]?["id"]?.stringValue, "\(created)")
            let channel = try #require(try await app.store.channel(id: channelID))
            let now = Date()
            let plan = try BroadcastPlan(
                JSONFields(body: Array(#"{"contentState": {"score": "1-0"}}"#.utf8)), channel: channel,
                sendID: SendID(at: now), at: now)
            // APNs takes the broadcast and never answers: only the cancellation ends the request.
            try emulator.setFaults(FaultConfiguration(noResponseProbability: 1))
            let request = Task { try await app.engine.broadcast(plan) }
            await emulator.waitForCounters { $0.faults["noResponse", default: 0] >= 1 }
            request.cancel()
            guard case .sent(let outcome, let record) = try await request.value else {
                Issue.record("a broadcast without sendAt is sent at once")
                return
            }
            #expect(!outcome.accepted && outcome.counts.total == 0, "\(outcome.counts)")
            #expect(record.status == .cancelled && record.counts.total == 0, "\(record)")
            #expect(record.message?.contains("Cancelled before APNs answered") == true, "\(record.message ?? "")")
            let stored = try await client.call(.get, "/api/sends/\(plan.sendID)", bearer: key)
            #expect(stored.json["status"] == "cancelled" && stored.json["counts"]?["failed"] == 0, "\(stored)")
            await emulator.waitForCounters { $0.clientResets >= 1 }
            let metrics = try await client.call(.get, "/metrics")
            #expect(
                metrics.body.contains("herald_notifications_cancelled_total 1\n"),
                "\(metrics.body.split(separator: "\n").filter { $0.contains("cancelled") })")
        }
    }

    @Test("a queued send is cancelled before it starts; cancelling again answers it again; ended and unknown sends are refused")
    func queued() async throws {
        try await ServerHarness.withServer(configure: { $0.limits.inlineSendLimit = 0 }) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let (tagged, other) = (testToken(0x61), testToken(0x62))
            try await client.register(tagged, debug: true, extra: #", "tags": ["news"]"#)
            try await client.register(other, debug: true, extra: #", "userId": "u""#)

            // The worker found nothing and waits for a wake-up: a send stored without one stays queued.
            await app.worker.waitUntilIdle()
            let send = try await Self.queue(app.store, target: #"{"tag": "news"}"#, count: 1)
            let answer = try await client.call(.delete, "/api/sends/\(send.id)", bearer: key)
            #expect(answer.status == .ok, "\(answer)")
            #expect(answer.json["status"] == "cancelled" && answer.json["counts"]?["accepted"] == 0)
            #expect(answer.json["message"]?.stringValue?.contains("nothing was sent") == true)
            let again = try await client.call(.delete, "/api/sends/\(send.id)", bearer: key)
            #expect(again.status == .ok && again.json["updatedAt"] == answer.json["updatedAt"], "\(again)")

            // A send queued after it runs (the worker claims the oldest waiting send first): the cancelled one never.
            let next = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u"}, "alert": "next"}"#, bearer: key)
            #expect(next.status == .accepted, "\(next)")
            let nextID = try #require(next.json["id"]?.stringValue.flatMap(SendID.init))
            #expect(try await app.worker.waitUntilFinished(nextID).status == .completed)
            #expect(try emulator.inbox(for: other).count == 1)
            #expect(emulator.device(tagged) == nil, "the cancelled send's device got nothing")
            let status = try await client.call(.get, "/api/sends/\(send.id)", bearer: key)
            #expect(status.json["status"] == "cancelled" && status.json["outcomes"] == [])

            let finished = try await client.call(.delete, "/api/sends/\(nextID)", bearer: key)
            #expect(finished.status == .conflict && finished.reason == "sendFinished", "\(finished)")
            #expect(try await client.call(.delete, "/api/sends/\(SendID())", bearer: key).reason == "unknownSend")
            #expect(try await client.call(.delete, "/api/sends/nope", bearer: key).reason == "invalidField")
            #expect(try await client.call(.delete, "/api/sends/\(send.id)").status == .unauthorized)
        }
    }
}
