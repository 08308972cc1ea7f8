import Foundation
import HeraldCore
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Logging
import Synchronization
import Testing

/// The worker sharing the in-flight budget between the apps whose sends run at once, on a real store and without HTTP
/// (docs/sending.md, "Many sends at once: lanes, weights and the shared budget").
@Suite("Engine: the in-flight budget shared between apps", .timeLimit(.minutes(3)))
struct WorkerFairnessTests {
    static let alpha = "com.alpha.app"
    static let beta = "com.beta.app"

    static func register(_ store: any Store, _ range: ClosedRange<Int>, topic: String) async throws {
        try await DeviceSeeding.register(
            range.map { n in
                TokenRegistration(token: StoreConformance.token(n), topic: topic, environment: .development)
            }, in: store)
    }

    /// A sender that holds every notification until the test releases it, so that the test sees which sends hold the
    /// in-flight budget at each step; ``open()`` lets every held and later notification through, accepted.
    final class SteppingSender: PushSender {
        private struct State {
            var arrived = 0
            var open = false
            var nextKey = 0
            var held: [Int: (token: DeviceToken, continuation: CheckedContinuation<Void, Never>)] = [:]
        }

        private let state = Mutex(State())
        /// How many notifications have arrived, held or not.
        let arrivals = CountSignal()

        /// The devices whose notifications are held now.
        var held: [DeviceToken] { state.withLock { $0.held.values.map(\.token) } }

        /// Answers the notifications held now; later ones are held again.
        func releaseHeld() {
            let released = state.withLock { state in
                defer { state.held = [:] }
                return state.held.values.map(\.continuation)
            }
            for continuation in released { continuation.resume() }
        }

        /// Answers every held notification and every later one at once.
        func open() {
            state.withLock { $0.open = true }
            releaseHeld()
        }

        func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment) async
            -> PushResult
        {
            let key = state.withLock { state in
                defer { state.nextKey += 1 }
                return state.nextKey
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let (passes, arrived) = state.withLock { state in
                        state.arrived += 1
                        if state.open || Task.isCancelled { return (true, state.arrived) }
                        state.held[key] = (token, continuation)
                        return (false, state.arrived)
                    }
                    arrivals.update(arrived)
                    if passes { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.held.removeValue(forKey: key) }?.continuation.resume()
            }
            if Task.isCancelled { return .cancelled("cancelled while held") }
            return PushResult(.accepted(apnsID: notification.apnsID ?? APNSID()))
        }
    }

    @Test(
        "two apps' sends running at once hold half of the in-flight budget each, although the first took all of it before the second began",
        arguments: Backend.available)
    func fairnessBetweenApps(backend: Backend) async throws {
        try await TestDatabase.withMigratedStore(backend) { store in
            try await Self.register(store, 1...300, topic: Self.alpha)
            try await Self.register(store, 1001...1300, topic: Self.beta)
            let alphaTokens = Set((1...300).map { StoreConformance.token($0) })
            let budget = 4
            // A page outlasts the rounds below, so that neither send ever waits for devices: each always wants more
            // than its share, and its share is all it gets.
            let pageSize = 100
            let sender = SteppingSender()
            let clock = SystemWallClock()
            let fanOut = FanOut(
                store: store,
                delivery: Delivery(
                    store: store, sender: sender, metrics: UncountedMetrics(),
                    logger: Logger(label: "herald.test.scheduler"), clock: clock),
                pageSize: pageSize, maximumInFlight: budget, clock: clock, budget: InFlightBudget(total: budget))
            let worker = EngineTesting.worker(
                store, fanOut: fanOut, apps: [Self.alpha, Self.beta], pageSize: pageSize, maximumInFlight: budget,
                instance: "fairness-test")
            var ids: [SendID] = []
            for topic in [Self.alpha, Self.beta] {
                ids.append(
                    try await EngineTesting.queueAlert("hello", to: .topic(topic), of: topic, count: 300, in: store).id)
            }
            let run = Task { try await worker.run() }
            worker.wake()

            // Whichever send began first took the whole budget; from the round after the other joins, each holds half.
            var arrived = 0
            var rounds: [(alpha: Int, beta: Int)] = []
            while rounds.count < 40 {
                arrived += budget
                await sender.arrivals.wait(untilAtLeast: arrived)
                try #require(sender.arrivals.count >= arrived, "the budget's \(budget) were held")
                let held = sender.held
                let alpha = held.filter(alphaTokens.contains).count
                rounds.append((alpha, held.count - alpha))
                sender.releaseHeld()
            }
            let first = try #require(rounds.firstIndex { $0.alpha > 0 && $0.beta > 0 }, "both sends ran: \(rounds)")
            #expect(first <= 10, "the second send joined within 10 rounds: \(rounds)")
            #expect(
                rounds[(first + 1)...].allSatisfy { $0.alpha == budget / 2 && $0.beta == budget / 2 },
                "each send held half the budget from the round after both ran: \(rounds)")

            sender.open()
            for id in ids { #expect(try await worker.waitUntilFinished(id).counts.accepted == 300) }
            run.cancel()
            _ = try? await run.value
        }
    }
}
