import Foundation
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

/// The fan-out's bulk path, on a real store and without HTTP: devices go to the sender without a task while it takes
/// them, and only what must wait (a device it refused, a retry, a rejection to apply to the registry) runs in a task.
@Suite("Engine: the fan-out's bulk path", .timeLimit(.minutes(2)))
struct FanOutTests {
    static let app = "com.example.app"

    @Test("every device is sent once, by start when the sender takes it and by send otherwise; rejections reach the registry", arguments: Backend.available)
    func bulkPath(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            let count = 300
            try await EngineTesting.registerDevices(1...count, of: Self.app, in: store)
            let send = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
            let plan = try EngineTesting.alertToEveryDevice(of: Self.app, send: send.id)
            let sender = BulkSender()
            let limit = 16
            let result = try await EngineTesting.fanOut(store, sender, maximumInFlight: limit).run(
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
            #expect(try await store.count(matching: .topic(Self.app)) == count - rejected.count)
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
