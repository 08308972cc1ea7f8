import Foundation
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

/// The worker stopping a send, on a real store and without HTTP: a cancelled send stops at once and keeps what APNs
/// answered; a shutdown past its grace puts a send back with what it held (docs/server.md, "Cancelling").
@Suite("Engine: a worker's sends cancelled and put back", .timeLimit(.minutes(3)))
struct WorkerCancelTests {
    static let app = "com.example.app"
    static let quietLogger: Logger = {
        var logger = Logger(label: "herald.test.worker")
        logger.logLevel = .critical
        return logger
    }()

    static func worker(
        _ store: any Store, _ sender: any PushSender, maximumInFlight: Int, shutdownGrace: Duration = .seconds(5)
    ) -> SendWorker {
        EngineTesting.worker(
            store, fanOut: EngineTesting.fanOut(store, sender, maximumInFlight: maximumInFlight), apps: [app],
            maximumInFlight: maximumInFlight, shutdownGrace: shutdownGrace, instance: "cancel-test")
    }

    /// Registers `count` production devices tagged `all`.
    static func registerTagged(_ count: Int, in store: any Store) async throws {
        for n in 1...count {
            _ = try await store.upsert(
                TokenRegistration(token: StoreConformance.token(n), topic: app, environment: .production, tags: ["all"]))
        }
    }

    @Test(
        "a running send stops without waiting for what APNs holds: what was answered is recorded, the held requests are cancelled and recorded as nothing, nothing more is sent, and a restarted worker never resumes it",
        arguments: Backend.available)
    func running(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            try await Self.registerTagged(120, in: store)
            _ = try await store.upsert(
                TokenRegistration(
                    token: StoreConformance.token(500), topic: Self.app, environment: .production,
                    userID: "later"))
            let send = try await EngineTesting.queueAlert(to: .tag("all"), of: Self.app, count: 120, in: store)
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
            let later = try await EngineTesting.queueAlert(to: .user("later"), of: Self.app, count: 1, in: store)
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
            let send = try await EngineTesting.queueAlert(to: .tag("all"), of: Self.app, count: 60, in: store)
            let limit = 8
            let sender = StallingSender(answering: 20)
            // No grace: the shutdown cancels what is in flight as soon as it begins.
            let worker = Self.worker(store, sender, maximumInFlight: limit, shutdownGrace: .zero)
            let group = ServiceGroup(services: [worker], logger: Self.quietLogger)
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
}
