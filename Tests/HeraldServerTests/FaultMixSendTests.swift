import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// A whole background send through APNs's bad days: the server, its store, the sender and an emulator injecting faults.
@Suite("Server: a send under a fault mix", .timeLimit(.minutes(3)))
struct FaultMixSendTests {
    @Test(
        "a 20,000-device send under 2 % 503, 1 % 429, 1 % refused streams, 0.2 % resets and connections closed every 1,000 requests loses nothing and records no failed"
    )
    func faultMix() async throws {
        let faults = FaultConfiguration(
            tooManyRequests: 0.01, serviceUnavailable: 0.02, goAwayAfterStreams: 1500, resetProbability: 0.002,
            refusedStreamProbability: 0.01, closeAfterStreams: 1000)
        try await TrustingEmulator.with(inbox: .countingOnly, faults: faults) { key, emulator, host in
            let count = 20_000
            try await ServerHarness.withServer(
                configure: {
                    $0.apns = .custom(host)
                    $0.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                    // Backoffs of milliseconds: the retry window (10 minutes) is far beyond the run.
                    $0.sending.retry = RetryPolicy(initialBackoff: .milliseconds(1), maximumBackoff: .milliseconds(50))
                },
                prepare: { try await TopicSends.register(count, in: $0) }
            ) { client, app in
                let secret = try await SendTests.key(app)
                let id = try await TopicSends.start(client, key: secret, alert: "through it all")
                let finished = try await app.worker.waitUntilFinished(id)
                #expect(finished.status == .completed, "\(finished)")
                #expect(finished.counts.accepted == count && finished.counts.failed == 0, "\(finished.counts)")
                let counters = emulator.counters
                #expect(
                    counters.accepted - counters.duplicateAPNSIDs == count,
                    "every notification reached APNs once under its own apns-id: \(counters)")
                for fault in ["ServiceUnavailable", "TooManyRequests", "refusedStream", "reset", "closeAfterStreams"] {
                    #expect(counters.faults[fault, default: 0] > 0, "\(fault) was injected")
                }
            }
        }
    }
}
