import Foundation
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// A restarted server resumes the send its killed predecessor held at once (the engine's crash bounds are in
/// HeraldSendingTests' SendCrashTests).
@Suite("Sends: a restart", .timeLimit(.minutes(2)))
struct SendRestartTests {
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
