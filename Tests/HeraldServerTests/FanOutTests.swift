import Dispatch
import Foundation
import HeraldAPNS
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldServer

/// The fan-out's bulk path: devices go to the sender without a task while it takes them, and only what must wait
/// (a device it refused, a retry, a rejection to apply to the registry) runs in a task.
@Suite("Sends: the fan-out's bulk path", .timeLimit(.minutes(2)))
struct FanOutTests {
    /// Refuses every third device in `start` (as a sender with no free stream does), answers the others from another
    /// thread, and asks for a task for every fifth (a retry).
    final class BulkSender: PushSender {
        private let log = Mutex<(started: [Int], sent: [Int], inFlight: Int, mostInFlight: Int)>(([], [], 0, 0))
        private let answers = DispatchQueue(label: "herald.test.answers")

        var started: [Int] { log.withLock { $0.started } }
        var sent: [Int] { log.withLock { $0.sent } }
        var mostInFlight: Int { log.withLock { $0.mostInFlight } }

        static func number(_ token: DeviceToken) -> Int { Int(token.hex.suffix(8), radix: 16)! }

        /// 410 for multiples of 7, accepted otherwise.
        static func result(_ n: Int) -> DeliveryOutcome.Result {
            n.isMultiple(of: 7)
                ? .rejected(status: 410, reason: .unregistered, timestamp: nil) : .accepted(apnsID: APNSID())
        }

        func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment) async
            -> PushResult
        {
            let n = Self.number(token)
            log.withLock { $0.sent.append(n) }
            return PushResult(Self.result(n))
        }

        func start(
            _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
            cancellation: APNSCancellation, answered: @escaping @Sendable (APNSStarted<PushResult>) -> Void
        ) -> Bool {
            let n = Self.number(token)
            guard !n.isMultiple(of: 3) else { return false }
            log.withLock {
                $0.started.append(n)
                $0.inFlight += 1
                $0.mostInFlight = max($0.mostInFlight, $0.inFlight)
            }
            answers.async {
                self.log.withLock { $0.inFlight -= 1 }
                if n.isMultiple(of: 5) {
                    answered(.continuing { PushResult(Self.result(n)) })
                } else {
                    answered(.finished(PushResult(Self.result(n))))
                }
            }
            return true
        }
    }

    @Test("every device is sent once, by start when the sender takes it and by send otherwise; rejections reach the registry", arguments: Backend.available)
    func bulkPath(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            let count = 300
            for n in 1...count {
                _ = try await store.upsert(
                    TokenRegistration(token: StoreConformance.token(n), topic: ServerHarness.topic, environment: .production))
            }
            let apps = AppDirectory(ServerHarness.configuration(databaseURL: "sqlite://unused").apps)
            let send = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
            let plan = try SendPlan(
                SendRequest(target: .everyDevice, topic: ServerHarness.topic, content: .typed(Payload(aps: APS(alert: .body("hi"))))),
                apps: apps, sendID: send.id, at: Date())
            let sender = BulkSender()
            let limit = 16
            let result = try await SendCrashTests.fanOut(store, sender, maximumInFlight: limit).run(
                plan, send: send.id, createdAt: send.createdAt, after: nil, lease: nil, collect: true)

            #expect(result.finished)
            let all = Set(1...count)
            #expect(Set(sender.started) == all.filter { !$0.isMultiple(of: 3) }, "the sender took these without a task")
            #expect(Set(sender.sent) == all.filter { $0.isMultiple(of: 3) }, "only the devices start refused went through send")
            #expect(sender.started.count + sender.sent.count == count, "each device once")
            #expect(sender.mostInFlight <= limit)
            let rejected = all.filter { $0.isMultiple(of: 7) }
            #expect(result.counts == OutcomeCounts(accepted: count - rejected.count, rejected: rejected.count))
            #expect(result.outcomes.count == count)
            #expect(
                result.outcomes.filter { $0.action == .removed }.map { BulkSender.number($0.outcome.token) }.sorted()
                    == rejected.sorted(), "each 410 removed its token, whichever path it took")
            #expect(try await store.count(matching: .topic(ServerHarness.topic)) == count - rejected.count)
            var stored: [DeliveryOutcome] = []
            var cursor: OutcomeCursor?
            repeat {
                let page = try await store.outcomes(of: send.id, after: cursor, limit: 100)
                stored += page.outcomes
                cursor = page.next
            } while cursor != nil
            #expect(Set(stored.map(\.token)).count == count && stored.count == count)
        }
    }
}
