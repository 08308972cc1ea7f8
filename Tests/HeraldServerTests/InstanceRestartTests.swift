import Foundation
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// Background sends on PostgreSQL when a process dies without a graceful shutdown: the same instance, restarted,
/// resumes its send at once; another instance leaves it alone until the lease runs out.
@Suite("Sends: instances restarting on PostgreSQL", .timeLimit(.minutes(2)))
struct InstanceRestartTests {
    /// One server process: its own store (its own connections) and a background worker under an instance id.
    struct WorkerProcess {
        let store: any Store
        let worker: SendWorker
        let sender: StallingSender
        let storeTask: Task<Void, any Error>
        let workerTask: Task<Void, any Error>

        /// Starts a process. Leases last an hour of a wall clock that never moves, and an idle worker polls once an
        /// hour: only the instance lock can resume a send in this test, and nothing waits for time to pass.
        static func start(
            instance: String, databaseURL: String, clock: ManualWallClock, sender: StallingSender,
            logger: Logger? = nil
        ) async throws -> WorkerProcess {
            let store = try StoreFactory.open(url: databaseURL, clock: clock)
            let storeTask = Task { try await store.run() }
            try await store.migrate()
            let ready = Gate()
            ready.open()
            let logger = logger ?? ServerHarness.quietLogger("herald.test.\(instance)")
            let apps = AppDirectory(ServerHarness.configuration(databaseURL: databaseURL).apps)
            let worker = SendWorker(
                store: store, servedApps: Set(apps.apps.keys), legacyJobs: RequestBodyJobs(apps: apps, store: store),
                fanOut: EngineTesting.fanOut(store, sender, maximumInFlight: 4),
                broadcaster: EngineTesting.noBroadcasts(store),
                sending: ServerConfiguration.Sending(leaseDuration: .seconds(3_600), pollInterval: .seconds(3_600)),
                instance: instance, clock: ContinuousClock(), wallClock: clock, storeReady: ready, logger: logger)
            let workerTask = Task { try await worker.run() }
            return WorkerProcess(
                store: store, worker: worker, sender: sender, storeTask: storeTask, workerTask: workerTask)
        }

        /// What `kill -9` does to the process: every task stops where it is, and its connections close.
        func kill() async {
            workerTask.cancel()
            _ = try? await workerTask.value
            storeTask.cancel()
            _ = try? await storeTask.value
        }
    }

    @Test(
        "a killed instance restarted with the same id resumes its send at once; another instance does not take it before the lease ends",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func restartResumesOwnSend() async throws {
        try await TestDatabase.with(.postgres) { try await run(databaseURL: $0) }
    }

    private func run(databaseURL: String) async throws {
        let clock = ManualWallClock()
        let tokens = (1...40).map { testToken($0) }
        let sendID = SendID()
        let alpha = try await WorkerProcess.start(
            instance: "alpha", databaseURL: databaseURL, clock: clock,
            sender: StallingSender(answering: 10))
        for token in tokens {
            _ = try await alpha.store.upsert(
                TokenRegistration(token: token, topic: ServerHarness.topic, environment: .production))
        }
        let job = #"{"target": {"topic": "com.example.app"}, "topic": "com.example.app", "alert": "resumed"}"#
        _ = try await alpha.store.createSend(
            NewSend(id: sendID, target: "every device", summary: "alert push", job: job, targetCount: tokens.count))
        alpha.worker.wake()

        // alpha is mid-send, with 4 notifications that APNs will never answer.
        await alpha.sender.held.wait(untilAtLeast: 4)

        // A second process misconfigured with alpha's id does not get the lock, says so, and leaves the send alone.
        let capture = LogCapture()
        let twin = try await WorkerProcess.start(
            instance: "alpha", databaseURL: databaseURL, clock: clock,
            sender: StallingSender(answering: .max), logger: capture.logger())
        await twin.worker.waitUntilIdle()
        #expect(twin.sender.sent.isEmpty, "a live worker's send is never taken")
        #expect(capture.all.contains { $0.contains("Another process holds the lock of instance alpha") })
        await twin.kill()

        // alpha is killed.
        await alpha.kill()

        let beta = try await WorkerProcess.start(
            instance: "beta", databaseURL: databaseURL, clock: clock,
            sender: StallingSender(answering: .max))
        let stillHeld = try #require(try await beta.store.send(sendID))
        #expect(stillHeld.status == .running && stillHeld.worker?.hasPrefix("alpha/") == true, "\(stillHeld)")
        await beta.worker.waitUntilIdle()
        #expect(beta.sender.sent.isEmpty, "another instance must not take a send whose lease holds")
        #expect(try await beta.store.send(sendID)?.worker == stillHeld.worker)

        let restarted = try await WorkerProcess.start(
            instance: "alpha", databaseURL: databaseURL, clock: clock,
            sender: StallingSender(answering: .max))
        let finished = try await restarted.worker.waitUntilFinished(sendID)
        #expect(finished.status == .completed && finished.counts.total == tokens.count, "\(finished)")
        #expect(!restarted.sender.sent.isEmpty, "the restarted alpha finished the send")
        #expect(beta.sender.sent.isEmpty, "beta sent nothing")
        #expect(
            Set(alpha.sender.sent.map(\.token)).union(restarted.sender.sent.map(\.token)) == Set(tokens),
            "every device was sent")

        await restarted.kill()
        await beta.kill()
    }
}
