import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldAPNS

@Suite("Sender: nothing given up before the retry window ends", .timeLimit(.minutes(5)))
struct SenderRetryWindowTests {
    let harness = SenderHarness()

    @Test(
        "20,000 notifications through 503s, 429s, refused streams, resets, GOAWAYs and closes: all accepted, each reaching APNs"
    )
    func faultMix() async throws {
        // Issue 24's mix: 2 % 503, 1 % 429, 1 % refused streams, 0.2 % resets, and on each connection a GOAWAY after
        // 1,500 requests and a close without GOAWAY after 1,000. Every close and reset cuts off the streams in flight
        // on its connection, so a notification can meet several in a row between the answers that ask for a retry.
        let faults = FaultConfiguration(
            tooManyRequests: 0.01, serviceUnavailable: 0.02, goAwayAfterStreams: 1500, resetProbability: 0.002,
            refusedStreamProbability: 0.01, closeAfterStreams: 1000)
        let retry = RetryPolicy(initialBackoff: .milliseconds(1), maximumBackoff: .milliseconds(50))
        let count = 20_000
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly),
            client: { harness.clientConfiguration($0, maximumConnections: 4, retry: retry) },
            // The real clock: the backoff is milliseconds, and the window (10 minutes) is far beyond the run.
            clock: ContinuousClock()
        ) { emulator, client in
            let notification = harness.alert()
            let items = (0..<count).map { index in
                (notification, try! DeviceToken(hex: String(format: "%064x", index + 1)))
            }
            let tally = Mutex((accepted: 0, notAccepted: [APNSDelivery](), ids: Set<String>(), resends: 0))
            try await client.sendAll(items, maximumInFlight: 1000) { delivery in
                tally.withLock { tally in
                    if delivery.outcome.isAccepted { tally.accepted += 1 } else { tally.notAccepted.append(delivery) }
                    tally.ids.insert(delivery.apnsID)
                    tally.resends += delivery.attempts - 1
                }
            }
            let (accepted, notAccepted, ids, resends) = tally.withLock {
                ($0.accepted, $0.notAccepted, $0.ids, $0.resends)
            }
            #expect(ids.count == count, "one delivery per notification")
            #expect(
                accepted == count && notAccepted.isEmpty, "\(notAccepted.count) not accepted: \(notAccepted.prefix(3))")
            let counters = emulator.counters
            #expect(
                counters.accepted - counters.duplicateAPNSIDs == count,
                "every notification reached APNs, under its own apns-id")
            #expect(counters.duplicateAPNSIDs <= resends, "duplicates only from re-sends of cut-off streams")
            // The mix happened.
            for fault in ["ServiceUnavailable", "TooManyRequests", "refusedStream", "reset", "closeAfterStreams"] {
                #expect(counters.faults[fault, default: 0] > 0, "\(fault) was injected")
            }
        }
    }

    @Test(
        "a server that refuses every stream for the whole window: retried with a growing backoff, then failed naming the window"
    )
    func refusedForTheWholeWindow() async throws {
        try await harness.run(
            emulator: harness.emulatorConfiguration(faults: FaultConfiguration(refusedStreamProbability: 1)),
            client: { harness.clientConfiguration($0, retry: RetryPolicy(initialBackoff: .seconds(1))) }
        ) { emulator, client in
            let delivery = await client.send(harness.alert(), to: harness.developmentDevice)
            guard case .failed(let error) = delivery.outcome else {
                Issue.record("expected a failure, got \(delivery.outcome)")
                return
            }
            #expect(error.code == .notProcessed)
            #expect(
                error.message.contains("the retry window of 10 min 0 s") && error.message.contains("REFUSED_STREAM"),
                "\(error)")
            // The window, not the cap, ended it: the backoff (1 s doubling to 30 s, full jitter) allows some dozens.
            #expect(delivery.attempts > 10 && delivery.attempts < 100, "\(delivery.attempts) attempts")
            #expect(delivery.unprocessedAttempts == delivery.attempts)
            let slept = harness.backoffClock.requestedSleeps.reduce(Duration.zero, +)
            #expect(slept == .seconds(600), "the last backoff ended exactly at the window's end")
            #expect(emulator.counters.faults["refusedStream"] == delivery.attempts)
        }
    }
}
