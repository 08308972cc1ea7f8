import Foundation
@testable import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldHTTP2
import HeraldTesting
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// A send waiting on APNs answers its cancellation at once: the request not yet written is never written, the one
/// written has its stream reset, and the caller gets `cancelled`, not a failure. The emulator holds answers for ever
/// (`noResponseProbability: 1`) and requests time out only after an hour, so a test that ends inside its time limit
/// ended by cancellation.
@Suite("Sender: cancellation", .timeLimit(.minutes(1)))
struct SenderCancellationTests {
    let harness = SenderHarness()

    typealias Bulk = APNSBulkSend<APNSBulkItem<Int>, APNSDelivery>

    /// One connection, whose requests would wait an hour for an answer APNs holds.
    func holdingClient(_ emulator: APNSEmulator) -> APNSClientConfiguration {
        harness.clientConfiguration(emulator, maximumConnections: 1, requestTimeout: .seconds(3600))
    }

    /// The emulator's counters once it holds `count` requests unanswered.
    func held(_ count: Int, by emulator: APNSEmulator) async {
        await emulator.waitForCounters { $0.faults["noResponse", default: 0] >= count }
    }

    /// Runs `body` against a permissive emulator and a holding client whose connection is open (its stream limit
    /// raised by an authenticated request) and whose every later request the emulator holds: a bulk send's starts
    /// then go out without a task and wait.
    func withHeldConnection(_ body: (APNSEmulator, APNSClient) async throws -> Void) async throws {
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, inbox: .countingOnly), client: holdingClient
        ) { emulator, client in
            _ = await client.send(harness.alert(), to: try DeviceToken(hex: String(repeating: "9", count: 64)))
            try emulator.setFaults(FaultConfiguration(noResponseProbability: 1))
            try await body(emulator, client)
        }
    }

    func items(_ count: Int) -> [APNSBulkItem<Int>] {
        let notification = harness.alert()
        return (0..<count).map { index in
            APNSBulkItem(notification, to: try! DeviceToken(hex: String(format: "%064x", index + 1)), context: index)
        }
    }

    @Test("a send whose answer APNs holds ends cancelled at once when its task is cancelled, and its stream is reset")
    func heldAnswer() async throws {
        try await harness.run(
            emulator: harness.emulatorConfiguration(faults: FaultConfiguration(noResponseProbability: 1)),
            client: holdingClient
        ) { emulator, client in
            let device = harness.developmentDevice
            let send = Task { await client.send(harness.alert("held"), to: device) }
            await held(1, by: emulator)
            send.cancel()
            let delivery = await send.value
            #expect(delivery.outcome.isCancelled, "\(delivery)")
            guard case .failed(let error) = delivery.outcome else { return }
            #expect(error.code == .cancelled && !error.isRetryable)
            #expect(error.message.contains("may or may not have received it"), "\(error.message)")
            #expect(delivery.attempts == 1)

            await emulator.waitForCounters { $0.clientResets >= 1 }
            #expect(emulator.counters.clientResets == 1, "the held stream, and only it, was reset")
            // The connection goes on serving, with no late answer mixed into the next one.
            try emulator.setFaults(FaultConfiguration())
            let next = await client.send(harness.alert("next"), to: device)
            #expect(next.outcome.isAccepted, "\(next)")
            #expect(client.connectionCount == 1)
        }
    }

    @Test("a send whose task is cancelled before its request is written is never sent")
    func cancelledBeforeWriting() async throws {
        try await harness.run(client: holdingClient) { emulator, client in
            let device = harness.developmentDevice
            #expect(await client.send(harness.alert("first"), to: device).outcome.isAccepted)
            let cancelled = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await client.send(harness.alert("never"), to: device)
            }
            let delivery = await cancelled.value
            #expect(delivery.outcome.isCancelled, "\(delivery)")
            if case .failed(let error) = delivery.outcome {
                #expect(error.message.contains("never"), "\(error.message)")
            }
            #expect(await client.send(harness.alert("last"), to: device).outcome.isAccepted)
            let texts = try emulator.inbox(for: device).map(\.payloadString)
            #expect(texts.count == 2 && texts.allSatisfy { !$0.contains("never") }, "\(texts)")
            #expect(emulator.counters.accepted == 2 && emulator.counters.clientResets == 0)
        }
    }

    @Test("a send cancelled while it waits for a retry's backoff ends cancelled, not failed with the last answer")
    func cancelledDuringBackoff() async throws {
        // The backoff sleeps on a clock that never moves: the send waits there until it is cancelled.
        let stoppedClock = ManualClock()
        try await harness.run(
            emulator: harness.emulatorConfiguration(faults: FaultConfiguration(serviceUnavailable: 1)),
            client: holdingClient, clock: stoppedClock
        ) { emulator, client in
            let send = Task { await client.send(harness.alert(), to: harness.developmentDevice) }
            await stoppedClock.waitForSleepers(count: 1)
            send.cancel()
            let delivery = await send.value
            #expect(delivery.outcome.isCancelled, "\(delivery)")
            if case .failed(let error) = delivery.outcome {
                #expect(error.message.contains("503 ServiceUnavailable"), "what the last attempt met: \(error.message)")
            }
            #expect(delivery.attempts == 1 && emulator.counters.faults["ServiceUnavailable"] == 1)
        }
    }

    @Test("a bulk send's held requests are reset and answer cancelled once it cancels them; one started after is never sent")
    func bulkCancelInFlight() async throws {
        let count = 10
        try await withHeldConnection { emulator, client in
            let answers = BatchQueue<Bulk.Answer>()
            var bulk: Bulk = client.bulkSend(permits: count + 1) { answers.push($0) }
            var outcomes: [APNSDelivery] = []
            let all = items(count + 1)
            try await withThrowingDiscardingTaskGroup { group in
                for item in all.prefix(count) { bulk.start(item, in: &group) }
                await held(count, by: emulator)
                bulk.cancelInFlight()
                group.cancelAll()
                bulk.start(all[count], in: &group)
                while bulk.inFlight > 0 {
                    for answer in try await answers.take() {
                        guard let delivery = bulk.outcome(of: answer, in: &group) else { continue }
                        bulk.finished(1)
                        outcomes.append(delivery)
                    }
                }
            }
            #expect(outcomes.count == count + 1)
            let allCancelled = outcomes.allSatisfy { $0.outcome.isCancelled }
            #expect(allCancelled, "\(outcomes.map(\.outcome))")
            await emulator.waitForCounters { $0.clientResets >= count }
            #expect(emulator.counters.clientResets == count, "each held stream was reset once")
            #expect(emulator.counters.faults["noResponse"] == count, "the one started after the cancellation never left")
        }
    }

    @Test("cancelling sendAll resets the requests it wrote without a task")
    func sendAllCancelled() async throws {
        let count = 10
        try await withHeldConnection { emulator, client in
            let notifications = items(count).map { ($0.notification, $0.token) }
            let delivered = Mutex<[APNSDelivery]>([])
            let run = Task {
                try await client.sendAll(notifications, maximumInFlight: count) { delivery in
                    delivered.withLock { $0.append(delivery) }
                }
            }
            await held(count, by: emulator)
            run.cancel()
            // Two endings are right: the loop sees its own cancellation and throws, or the resets answer every
            // request `cancelled` first and it returns with each of them delivered as such.
            do {
                try await run.value
                let outcomes = delivered.withLock { $0.map(\.outcome) }
                #expect(outcomes.count == count && outcomes.allSatisfy(\.isCancelled), "\(outcomes)")
            } catch {
                #expect(error is CancellationError, "\(error)")
            }
            await emulator.waitForCounters { $0.clientResets >= count }
            #expect(emulator.counters.clientResets == count)
        }
    }

    @Test(
        "on the connection: a cancelled stream gets RST_STREAM CANCEL and one cancelled answer, its late answer is ignored, an answered one keeps its answer, and one cancelled before writing is never written"
    )
    func handlerCancellation() throws {
        var connection = try ConnectionHandlerTests.Connection()
        let calls = Mutex<[String: [Result<APNSResponse, APNSClientError>]]>([:])
        let cancellation = APNSCancellation()
        func send(_ apnsID: String, _ cancellation: APNSCancellation?) {
            connection.handler.write([
                APNSStreamRequest(
                    template: connection.template, token: connection.token, apnsID: apnsID,
                    body: ByteBuffer(string: "{}"), cancellation: cancellation
                ) { result in calls.withLock { $0[apnsID, default: []].append(result) } }
            ])
        }
        func codes(_ apnsID: String) -> [String] {
            calls.withLock { $0[apnsID] ?? [] }.map { result in
                switch result {
                case .success(let response): "\(response.status)"
                case .failure(let error): "\(error.code)"
                }
            }
        }
        send("answered", cancellation)
        send("held", cancellation)
        send("other", nil)
        _ = try connection.frames()
        try connection.respond(streamID: 1, status: "200", apnsID: "answered")

        cancellation.cancel()
        connection.handler.cancel(cancellation)
        let resets = try connection.frames().filter { $0.knownType == .rstStream }
        #expect(resets.map(\.streamID) == [3], "only the stream still waiting is reset")
        #expect(resets.first?.resetCode == HTTP2ErrorCode.cancel.rawValue)
        #expect(codes("answered") == ["200"] && codes("held") == ["cancelled"] && codes("other").isEmpty)

        // APNs answers the reset stream anyway: ignored, and the connection stays up.
        try connection.respond(streamID: 3, status: "200", apnsID: "held")
        #expect(codes("held") == ["cancelled"], "one answer per request")
        try connection.respond(streamID: 5, status: "200", apnsID: "other")
        #expect(codes("other") == ["200"])

        send("late", cancellation)
        #expect(codes("late") == ["cancelled"])
        let written = try connection.frames()
        #expect(written.isEmpty, "a request cancelled before it was written is never written: \(written.map(\.knownType))")
        #expect(connection.channel.isActive, "no connection error")
    }
}
