import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldAPNS

/// The one bulk loop (``APNSBulkSend``) against the emulator over loopback TLS, driven the way the fan-out and
/// `herald send --repeat` drive it: one task drains the answers in batches, everything else runs task-free or in
/// child tasks of its group.
@Suite("Sender: the bulk send", .timeLimit(.minutes(2)))
struct BulkSendTests {
    let harness = SenderHarness()

    typealias Bulk = APNSBulkSend<APNSBulkItem<Int>, APNSDelivery>

    /// What a drive saw: each outcome with its item, and the answers that needed a task for a retry.
    struct Drive {
        var outcomes: [(item: APNSBulkItem<Int>, delivery: APNSDelivery)] = []
        var continuing: Set<Int> = []
        var mostInFlight = 0
        /// After each start: how many outcomes had come, and how many items were in flight.
        var starts: [(outcomes: Int, inFlight: Int)] = []
    }

    /// Distinct tokens (permissive mode), each item's context its index.
    func items(_ count: Int) -> [APNSBulkItem<Int>] {
        let notification = harness.alert()
        return (0..<count).map { index in
            APNSBulkItem(notification, to: try! DeviceToken(hex: String(format: "%064x", index + 1)), context: index)
        }
    }

    /// Starts items while permits allow and drains answers until every item ended. `afterOutcome` may change the
    /// permits (it sees how many outcomes came so far); `waiting` hears how many are in flight each time the loop is
    /// about to wait for answers.
    func drive(
        _ client: APNSClient, _ items: [APNSBulkItem<Int>], permits: Int,
        waiting: (Int) -> Void = { _ in }, afterOutcome: (inout Bulk, Int) -> Void = { _, _ in }
    ) async throws -> Drive {
        let answers = BatchQueue<Bulk.Answer>()
        var bulk: Bulk = client.bulkSend(permits: permits) { answers.push($0) }
        var drive = Drive()
        try await withThrowingDiscardingTaskGroup { group in
            var next = items.makeIterator()
            var pending = next.next()
            while pending != nil || bulk.inFlight > 0 {
                while let item = pending, bulk.hasPermit {
                    #expect(bulk.start(item, in: &group))
                    drive.mostInFlight = max(drive.mostInFlight, bulk.inFlight)
                    drive.starts.append((drive.outcomes.count, bulk.inFlight))
                    pending = next.next()
                }
                waiting(bulk.inFlight)
                for answer in try await answers.take() {
                    if case .continuing = answer.started { drive.continuing.insert(answer.item.context) }
                    guard let delivery = bulk.outcome(of: answer, in: &group) else { continue }
                    bulk.finished(1)
                    drive.outcomes.append((answer.item, delivery))
                    afterOutcome(&bulk, drive.outcomes.count)
                }
            }
        }
        return drive
    }

    @Test("each item's context comes back once with its own outcome, and no more than the permits are in flight")
    func contextAndBound() async throws {
        let count = 400
        let permits = 8
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, inbox: .countingOnly),
            client: { harness.clientConfiguration($0, maximumConnections: 1) }
        ) { emulator, client in
            let drive = try await drive(client, items(count), permits: permits)
            #expect(drive.outcomes.map(\.item.context).sorted() == Array(0..<count))
            for (item, delivery) in drive.outcomes {
                #expect(delivery.token == item.token, "item \(item.context) came back with another's outcome")
                #expect(delivery.outcome.isAccepted)
            }
            #expect(drive.mostInFlight == permits, "the permits were used")
            // The connection's own count: what APNs saw at once, not what the loop believes.
            #expect(client.mostStreamsOnOneConnection <= permits)
            #expect(emulator.counters.accepted == count)
        }
    }

    @Test("permits that shrink mid-run stop new starts until what is in flight falls below them; nothing is lost")
    func permitsShrink() async throws {
        let count = 600
        let shrunk = 2
        let atShrink = Mutex((refused: false, inFlight: 0))
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, inbox: .countingOnly),
            client: { harness.clientConfiguration($0, maximumConnections: 1) }
        ) { emulator, client in
            let drive = try await drive(client, items(count), permits: 64, afterOutcome: { bulk, outcomes in
                guard outcomes == 100 else { return }
                bulk.permits = shrunk
                let seen = (refused: !bulk.hasPermit, inFlight: bulk.inFlight)
                atShrink.withLock { $0 = seen }
            })
            let seen = atShrink.withLock { $0 }
            #expect(seen.inFlight > shrunk, "the shrink came while more than the new permits were in flight")
            #expect(seen.refused, "no permit right after the shrink")
            let later = drive.starts.filter { $0.outcomes >= 100 }
            #expect(!later.isEmpty && later.allSatisfy { $0.inFlight <= shrunk }, "every later start within the new permits")
            #expect(drive.mostInFlight == 64, "the first permits were used")
            #expect(drive.outcomes.count == count && drive.outcomes.allSatisfy { $0.delivery.outcome.isAccepted })
            #expect(emulator.counters.accepted == count)
        }
    }

    @Test("a first attempt APNs asks to retry comes back as continuing, gets a task, and ends accepted")
    func retriesGetATask() async throws {
        let count = 300
        try await harness.run(
            emulator: harness.emulatorConfiguration(
                mode: .permissive, faults: FaultConfiguration(tooManyRequests: 0.2), inbox: .countingOnly),
            client: { harness.clientConfiguration($0, maximumConnections: 1, retry: RetryPolicy(initialBackoff: .milliseconds(1))) }
        ) { emulator, client in
            // Open the connection first, so that the bulk's starts find free streams and go out task-free.
            _ = await client.send(harness.alert(), to: try DeviceToken(hex: String(repeating: "9", count: 64)))
            let drive = try await drive(client, items(count), permits: 16)
            #expect(!drive.continuing.isEmpty, "some first attempts were answered 429")
            #expect(drive.outcomes.count == count && drive.outcomes.allSatisfy { $0.delivery.outcome.isAccepted })
            for (item, delivery) in drive.outcomes where drive.continuing.contains(item.context) {
                #expect(delivery.attempts > 1, "item \(item.context) was retried in its task")
            }
            #expect(Set(drive.outcomes.map(\.delivery.apnsID)).count == count, "one apns-id per item, kept across retries")
            #expect(emulator.counters.faults["TooManyRequests", default: 0] >= drive.continuing.count)
        }
    }

    @Test("cancelling the driving task ends the bulk send while requests are still unanswered")
    func cancellation() async throws {
        let permits = 10
        let started = CountSignal()
        try await harness.run(
            emulator: harness.emulatorConfiguration(mode: .permissive, inbox: .countingOnly),
            client: { harness.clientConfiguration($0, maximumConnections: 1, requestTimeout: .seconds(600)) }
        ) { emulator, client in
            // A connection that is open and has its streams: the bulk's starts go out task-free, then APNs goes quiet.
            _ = await client.send(harness.alert(), to: try DeviceToken(hex: String(repeating: "9", count: 64)))
            try emulator.setFaults(FaultConfiguration(noResponseProbability: 1))
            let run = Task {
                try await drive(client, items(100), permits: permits, waiting: { started.update($0) })
            }
            // Every permit is in flight, unanswered, and the loop waits for answers.
            await started.wait(untilAtLeast: permits)
            run.cancel()
            let result = await run.result
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(emulator.counters.accepted == 1, "nothing after the warm-up was answered")
        }
    }
}
