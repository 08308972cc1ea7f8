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
    static func queue(_ store: any Store, target: String, count: Int) async throws -> SendRecord {
        let job = #"{"target": \#(target), "topic": "\#(ServerHarness.topic)", "alert": "hi"}"#
        return try await store.createSend(NewSend(target: target, summary: "alert push", job: job, targetCount: count))
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
