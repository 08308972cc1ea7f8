import Foundation
@testable import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Synchronization
import Testing

@Suite("Sender: faults, connections and provider tokens", .timeLimit(.minutes(3)))
struct SenderResilienceTests {
    let harness = SenderHarness()

    /// Sends `count` notifications to distinct devices (permissive mode) with the bulk API and returns them.
    func burst(_ client: APNSClient, count: Int, maximumInFlight: Int = 200, notification: PreparedNotification? = nil)
        async throws -> [APNSDelivery]
    {
        let notification = notification ?? harness.alert()
        let items = (0..<count).map { index in
            (notification, try! DeviceToken(hex: String(format: "%064x", index + 1)))
        }
        let deliveries = Mutex<[APNSDelivery]>([])
        try await client.sendAll(items, maximumInFlight: maximumInFlight) { delivery in
            deliveries.withLock { $0.append(delivery) }
        }
        return deliveries.withLock { $0 }
    }

    /// Every notification ended accepted, reached the emulator, and reached it once, unless `forcedResends` allows
    /// re-sends the protocol forces (a connection cut after APNs answered but before the answer arrived).
    func expectNothingLost(_ deliveries: [APNSDelivery], count: Int, emulator: APNSEmulator, forcedResends: Bool = false,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(deliveries.count == count, sourceLocation: sourceLocation)
        #expect(Set(deliveries.map(\.apnsID)).count == count, "one delivery per notification", sourceLocation: sourceLocation)
        let accepted = deliveries.filter(\.outcome.isAccepted).count
        #expect(accepted == count, "\(deliveries.filter { !$0.outcome.isAccepted }.prefix(3))", sourceLocation: sourceLocation)
        let counters = emulator.counters
        #expect(counters.accepted - counters.duplicateAPNSIDs == accepted, "every notification reached APNs", sourceLocation: sourceLocation)
        if forcedResends {
            let resends = deliveries.map { $0.attempts - 1 }.reduce(0, +)
            #expect(counters.duplicateAPNSIDs <= resends, "duplicates only from re-sends", sourceLocation: sourceLocation)
        } else {
            #expect(counters.duplicateAPNSIDs == 0, sourceLocation: sourceLocation)
        }
    }

    @Test("a burst starts at one stream and fans out once the server raises the limit")
    func fanOut() async throws {
        try await harness.run(emulator: harness.emulatorConfiguration(mode: .permissive, inbox: .countingOnly)) { emulator, client in
            let deliveries = try await burst(client, count: 2000)
            expectNothingLost(deliveries, count: 2000, emulator: emulator)
            #expect(deliveries.allSatisfy { $0.attempts == 1 })
            // The emulator allows one stream until the provider token is verified; a client that kept to it (or
            // ignored the raised limit) would never carry two streams on one connection.
            #expect(client.mostStreamsOnOneConnection > 1, "the raised MAX_CONCURRENT_STREAMS was used")
            #expect(emulator.counters.connections <= 2, "no connection was opened that the limit did not ask for")
        }
    }

    @Test("GOAWAY mid-burst: streams above last-stream-id go out again on another connection, none twice")
    func goAway() async throws {
        let faults = FaultConfiguration(goAwayAfterStreams: 150)
        try await harness.run(emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly)) { emulator, client in
            let deliveries = try await burst(client, count: 1000)
            expectNothingLost(deliveries, count: 1000, emulator: emulator)
            #expect(emulator.counters.goAways >= 5)
            #expect(deliveries.contains { $0.attempts > 1 }, "some streams were above the GOAWAY and were re-sent")
        }
    }

    @Test("GOAWAY under latency: streams processed while its answer waited are answered before the close, none twice")
    func goAwayWithLatency() async throws {
        // With answers held back 1–40 ms, later streams are processed while the GOAWAY's own stream waits for its
        // answer. APNs's last-stream-id promises that nothing above it was processed, so it must cover them, and
        // they must be answered before the connection closes; otherwise the client re-sends what already arrived.
        let faults = FaultConfiguration(goAwayAfterStreams: 150, latency: .uniform(minimumMilliseconds: 1, maximumMilliseconds: 40))
        try await harness.run(emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly)) { emulator, client in
            let deliveries = try await burst(client, count: 1000)
            expectNothingLost(deliveries, count: 1000, emulator: emulator, forcedResends: true)
            #expect(emulator.counters.goAways >= 3)
            // What may still come twice: answers the closing connection's TCP reset threw away (the client's
            // requests above last-stream-id arrive unread), as in "connection resets". 0–2 per run here; before
            // last-stream-id covered the streams answered late, about 190 of the 1,000 arrived twice.
            #expect(emulator.counters.duplicateAPNSIDs <= 20, "streams processed before the GOAWAY were not re-sent")
        }
    }

    @Test("streams APNs never processed are re-sent, even for a notification that may be tried only once")
    func unprocessedAreResent() async throws {
        // Each connection serves 20 streams and then sends GOAWAY: a burst of 100 meets several GOAWAYs in a row,
        // and every stream above a GOAWAY's last-stream-id was never processed. apns-expiration 0 ("try once")
        // forbids a retry after an attempt APNs processed, not the re-send of one it never saw.
        let faults = FaultConfiguration(goAwayAfterStreams: 20)
        let once = try PushNotification(Payload(aps: APS(alert: .body("Now or never"))), topic: APNSOutcomeTable.bundleID, expiration: .immediately)
            .prepare()
        try await harness.run(emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly)) { emulator, client in
            let deliveries = try await burst(client, count: 100, maximumInFlight: 100, notification: once)
            expectNothingLost(deliveries, count: 100, emulator: emulator)
            #expect(deliveries.contains { $0.attempts > 1 }, "some streams were above a GOAWAY and were re-sent")
            #expect(deliveries.allSatisfy { $0.attempts == $0.unprocessedAttempts + 1 }, "only unprocessed attempts were repeated")
        }
    }

    @Test("connection resets: in-flight notifications are re-sent with the same apns-id")
    func resets() async throws {
        let faults = FaultConfiguration(resetProbability: 0.01)
        try await harness.run(emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly)) { emulator, client in
            let deliveries = try await burst(client, count: 1000)
            // A reset can lose answers APNs already sent (the kernel drops unread data on RST): those notifications
            // must go out again, and arrive twice. The same apns-id lets the receiver tell.
            expectNothingLost(deliveries, count: 1000, emulator: emulator, forcedResends: true)
            #expect(emulator.counters.faults["reset", default: 0] > 0)
        }
    }

    @Test("streams that never answer time out and are retried like a 5xx")
    func unansweredStreams() async throws {
        let faults = FaultConfiguration(noResponseProbability: 0.05)
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly),
            client: { harness.clientConfiguration($0, requestTimeout: .seconds(2)) }
        ) { emulator, client in
            let deliveries = try await burst(client, count: 300, maximumInFlight: 50)
            // End to end only: that a timed-out stream is re-sent and nothing is lost. When the timeout fires is
            // checked on virtual time (ConnectionHandlerTests "requestTimeout"). A stream answered after the timeout
            // on a loaded machine was processed and is sent again: a duplicate that only a re-send can cause.
            expectNothingLost(deliveries, count: 300, emulator: emulator, forcedResends: true)
            #expect(emulator.counters.faults["noResponse", default: 0] > 0)
        }
    }

    @Test("429, 500 and 503 storms are retried with backoff until accepted")
    func storms() async throws {
        // 30 % of answers are transient errors: hundreds of notifications need several attempts, and the retry window
        // (10 minutes on the manual clock, which each backoff moves) outlasts any run of them.
        let faults = FaultConfiguration(tooManyRequests: 0.1, internalServerError: 0.1, serviceUnavailable: 0.05, shutdown: 0.05)
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, faults: faults, inbox: .countingOnly),
            client: { harness.clientConfiguration($0, retry: RetryPolicy(initialBackoff: .milliseconds(100))) }
        ) { emulator, client in
            let deliveries = try await burst(client, count: 600)
            expectNothingLost(deliveries, count: 600, emulator: emulator)
            #expect(deliveries.contains { $0.attempts >= 3 })
            #expect(!harness.backoffClock.requestedSleeps.isEmpty, "retries waited on the injected clock")
        }
    }

    @Test("a retry policy that runs out ends failed with APNs's last answer and what each attempt met, never silently")
    func exhausted() async throws {
        try await harness.run(
            emulator: harness.emulatorConfiguration(faults: FaultConfiguration(serviceUnavailable: 1)),
            client: { harness.clientConfiguration($0, retry: RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(10))) }
        ) { emulator, client in
            let delivery = await client.send(harness.alert(), to: harness.developmentDevice)
            #expect(delivery.attempts == 3)
            guard case .failed(let error) = delivery.outcome else {
                Issue.record("expected a failure, got \(delivery.outcome)")
                return
            }
            #expect(error.code == .retryLater && error.rejection?.reason == .serviceUnavailable && error.rejection?.status == 503)
            #expect(error.message.contains("503 ServiceUnavailable ×3") && error.message.contains("maximumAttempts"), "\(error)")
            #expect(harness.backoffClock.requestedSleeps.count == 2)
        }
    }

    @Test("a server that refuses every stream: re-sent at once, then after a growing backoff, until the cap; then failed")
    func refusedEveryStream() async throws {
        let retry = RetryPolicy(maximumAttempts: 7, initialBackoff: .milliseconds(10))
        try await harness.run(
            emulator: harness.emulatorConfiguration(faults: FaultConfiguration(refusedStreamProbability: 1)),
            client: { harness.clientConfiguration($0, retry: retry) }
        ) { emulator, client in
            let delivery = await client.send(harness.alert(), to: harness.developmentDevice)
            #expect(delivery.attempts == 7 && delivery.unprocessedAttempts == 7)
            guard case .failed(let error) = delivery.outcome else {
                Issue.record("expected a failure, got \(delivery.outcome)")
                return
            }
            #expect(error.code == .notProcessed)
            #expect(error.description.contains("REFUSED_STREAM") && error.description.contains("7 attempts"), "\(error)")
            #expect(error.description.contains("not processed (refused stream, GOAWAY or closing connection) ×7"), "\(error)")
            #expect(emulator.counters.faults["refusedStream"] == 7, "every attempt reached the emulator and was refused")
            #expect(emulator.counters.accepted == 0)
            #expect((try? emulator.inbox(for: harness.developmentDevice))?.isEmpty == true)
            // The first re-send of an unprocessed attempt goes out at once; every later one waits its backoff.
            #expect(harness.backoffClock.requestedSleeps.count == 5)
        }
    }

    @Test("10,000 notifications over an hour never trip the 20-minute token rule")
    func jwtOverAnHour() async throws {
        try await harness.run(emulator: harness.emulatorConfiguration(mode: .permissive, inbox: .countingOnly)) { emulator, client in
            let notification = harness.alert()
            var rejected = 0
            for batch in 0..<100 {
                let items = (0..<100).map { index in (notification, try! DeviceToken(hex: String(format: "%064x", batch * 100 + index + 1))) }
                try await client.sendAll(items, maximumInFlight: 100) { delivery in
                    if !delivery.outcome.isAccepted { rejected += 1 }
                }
                harness.clock.advance(by: .seconds(36))
            }
            #expect(rejected == 0)
            #expect(emulator.counters.accepted == 10_000)
            #expect(emulator.counters.rejected["TooManyProviderTokenUpdates"] == nil)
            #expect(harness.tokens.signatureCount == 2, "one token at the start, one after 50 minutes")
        }
    }

    @Test("certificate authentication with a client certificate")
    func certificate() async throws {
        let authority = try LocalCertificateAuthority(commonName: "Test WWDR")
        let issued = try authority.issueClientCertificate(bundleID: APNSOutcomeTable.bundleID)
        try await harness.run(
            emulator: harness.emulatorConfiguration(clientCA: authority.certificatePEM),
            client: { harness.clientConfiguration($0, credentials: .certificate(chainPEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM)) }
        ) { emulator, client in
            let delivery = await client.send(harness.alert(), to: harness.developmentDevice)
            #expect(delivery.outcome.isAccepted)
            let other = await client.send(harness.alert(topic: "com.other.app"), to: harness.developmentDevice)
            #expect(other.outcome.rejection?.reason == .topicDisallowed)
        }
    }

    @Test("the production host and a development token: BadDeviceToken, not retried")
    func environments() async throws {
        try await harness.run(client: { harness.clientConfiguration($0, environment: .production) }) { emulator, client in
            #expect(await client.send(harness.alert(), to: harness.productionDevice).outcome.isAccepted)
            let wrong = await client.send(harness.alert(), to: harness.developmentDevice)
            #expect(wrong.outcome.rejection?.reason == .badDeviceToken && wrong.attempts == 1)
        }
    }

    @Test("an unreachable host fails with connectFailed after the retries, and says where")
    func unreachable() async throws {
        let configuration = APNSClientConfiguration(
            destination: .custom(host: "127.0.0.1", port: 1, environment: .development), credentials: .token(harness.tokens),
            retry: RetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(1)))
        try await APNSClient.withClient(configuration: configuration, clock: harness.backoffClock) { client in
            let delivery = await client.send(harness.alert(), to: harness.developmentDevice)
            guard case .failed(let error) = delivery.outcome else {
                Issue.record("expected a failure, got \(delivery.outcome)")
                return
            }
            #expect(error.code == .connectFailed && error.description.contains("127.0.0.1:1"))
            #expect(delivery.attempts == 3)
        }
    }
}
