import HeraldCore
import HeraldSending
import HeraldStore
import Synchronization
import Testing

/// The shared in-flight budget: lanes first, then apps by weight, then sends; never more than the total.
@Suite struct InFlightBudgetTests {
    /// A send as the fan-out drives it: permits it holds, what it has in flight, what the callback granted.
    final class Sender: Sendable {
        let flow: InFlightBudget.Flow
        let budget: InFlightBudget
        private let state = Mutex((held: 0, inUse: 0, grantedLater: 0))

        init(
            _ budget: InFlightBudget, app: String, lane: SendLane = .campaign, weight: Double = 1,
            priority: AppPriority = .normal
        ) {
            self.budget = budget
            let box = GrantBox()
            flow = budget.join(app: app, lane: lane, share: InFlightBudget.AppShare(priority: priority, weight: weight)) {
                box.add($0)
            }
            self.box = box
        }

        private let box: GrantBox

        var held: Int { state.withLock { $0.held } + box.take(peek: true) }

        /// Takes the permits granted by callback, then reports `wanted` more than in flight; starts what it holds.
        func report(wanting extra: Int) {
            let later = box.take(peek: false)
            state.withLock { state in
                state.held += later
                let delta = budget.update(flow, inUse: state.inUse, wanted: state.inUse + extra)
                state.held += delta
                state.inUse = min(state.held, state.inUse + extra)
            }
        }

        /// Outcomes of `count` notifications in flight were committed.
        func recorded(_ count: Int, stillWanting extra: Int) {
            state.withLock { $0.inUse -= count }
            report(wanting: extra)
        }

        var inUse: Int { state.withLock { $0.inUse } }
    }

    final class GrantBox: Sendable {
        private let granted = Mutex(0)
        func add(_ count: Int) { granted.withLock { $0 += count } }
        func take(peek: Bool) -> Int {
            granted.withLock { value in
                defer { if !peek { value = 0 } }
                return value
            }
        }
    }

    @Test func aLoneSendGetsTheWholeBudgetAndNoMore() {
        let budget = InFlightBudget(total: 1000)
        let send = Sender(budget, app: "a")
        send.report(wanting: 5000)
        #expect(send.held == 1000)
        #expect(send.inUse == 1000)
        #expect(budget.snapshot.inUse == 1000)
        #expect(budget.snapshot.waiting == 1)
    }

    @Test func twoAppsConvergeToHalfEachWithinOneRoundOfOutcomes() {
        let budget = InFlightBudget(total: 1000)
        let first = Sender(budget, app: "alpha")
        first.report(wanting: 100_000)
        let second = Sender(budget, app: "beta")
        second.report(wanting: 100_000)
        #expect(second.held == 0, "nothing is taken back from APNs: the first holds everything in flight")
        // The first send's outcomes come back in batches; what it frees above its share goes to the second.
        for _ in 0..<10 { first.recorded(100, stillWanting: 100_000) }
        #expect(first.held == 500)
        #expect(second.held == 500)
        #expect(budget.snapshot.inUse == 1000)
    }

    /// Every send's notifications in flight come back and each asks again, `rounds` times: where shares settle.
    static func settle(_ sends: [Sender], wanting: Int, rounds: Int = 3) {
        for _ in 0..<rounds {
            for send in sends { send.recorded(send.inUse, stillWanting: wanting) }
        }
    }

    @Test func appWeightsSplitTheBudgetInProportion() {
        let budget = InFlightBudget(total: 1000)
        let heavy = Sender(budget, app: "heavy", weight: 3)
        let light = Sender(budget, app: "light", weight: 1)
        heavy.report(wanting: 10_000)
        light.report(wanting: 10_000)
        Self.settle([heavy, light], wanting: 10_000)
        #expect(heavy.held == 750)
        #expect(light.held == 250)
    }

    @Test func aHighPriorityAppGetsWhatItWantsBeforeNormalAndLowOnesOfItsLane() {
        let budget = InFlightBudget(total: 1000)
        let low = Sender(budget, app: "low", priority: .low)
        let normal = Sender(budget, app: "normal", weight: 100)
        let high = Sender(budget, app: "high", priority: .high)
        for send in [low, normal, high] { send.report(wanting: 10_000) }
        Self.settle([low, normal, high], wanting: 10_000)
        // Below a higher priority a send keeps the one permit that keeps it from starving, no more.
        #expect(high.held >= 998, "a weight does not lift an app above a higher priority")
        #expect(normal.held <= 1 && low.held <= 1)

        // The high app wants less: the normal one gets the rest before the low one gets more.
        high.recorded(high.inUse, stillWanting: 300)
        Self.settle([low, normal], wanting: 10_000)
        #expect(high.held == 300)
        #expect(normal.held >= 699 && low.held <= 1)
    }

    @Test func aPriorityNeverCrossesLanes() {
        let budget = InFlightBudget(total: 1000)
        let campaign = Sender(budget, app: "high", lane: .campaign, priority: .high)
        let activity = Sender(budget, app: "low", lane: .activity, priority: .low)
        activity.report(wanting: 10_000)
        campaign.report(wanting: 10_000)
        Self.settle([activity, campaign], wanting: 10_000)
        #expect(activity.held >= 999, "the earlier lane first, whatever the apps' priorities")
    }

    @Test func anAppsShareIsSplitBetweenItsSends() {
        let budget = InFlightBudget(total: 1200)
        let alphaOne = Sender(budget, app: "alpha")
        let alphaTwo = Sender(budget, app: "alpha")
        let beta = Sender(budget, app: "beta")
        for send in [alphaOne, alphaTwo, beta] { send.report(wanting: 10_000) }
        Self.settle([alphaOne, alphaTwo, beta], wanting: 10_000)
        #expect(beta.held == 600)
        #expect(alphaOne.held == 300)
        #expect(alphaTwo.held == 300)
    }

    @Test func anEarlierLaneIsServedBeforeACampaign() {
        let budget = InFlightBudget(total: 1000)
        let campaign = Sender(budget, app: "a", lane: .campaign)
        campaign.report(wanting: 1_000_000)
        let update = Sender(budget, app: "a", lane: .activity)
        update.report(wanting: 300)
        #expect(update.held == 0)
        // The campaign's next 300 outcomes free 300 permits: all of them go to the Live Activity update.
        campaign.recorded(300, stillWanting: 1_000_000)
        #expect(update.held == 300)
        #expect(campaign.held == 700)
    }

    @Test func aSendThatWantsLittleLeavesTheRestToOthers() {
        let budget = InFlightBudget(total: 1000)
        let paced = Sender(budget, app: "paced")
        let fast = Sender(budget, app: "fast")
        paced.report(wanting: 5)
        fast.report(wanting: 100_000)
        #expect(paced.held == 5)
        #expect(fast.held == 995)
    }

    @Test func leavingFreesEverythingForTheSendsThatWait() {
        let budget = InFlightBudget(total: 100)
        let first = Sender(budget, app: "a")
        let second = Sender(budget, app: "b")
        first.report(wanting: 1000)
        second.report(wanting: 1000)
        #expect(second.held == 0)
        budget.leave(first.flow)
        #expect(second.held == 100)
        #expect(budget.snapshot.flows == 1)
    }

    @Test func moreSendsThanPermitsEachGetOneInTurn() {
        let budget = InFlightBudget(total: 2)
        let sends = (0..<3).map { Sender(budget, app: "app\($0)") }
        for send in sends { send.report(wanting: 10) }
        #expect(sends.map(\.held) == [2, 0, 0], "the first asked while nobody else wanted anything")
        sends[0].recorded(1, stillWanting: 10)
        #expect(sends.map(\.held) == [1, 1, 0])
        budget.leave(sends[0].flow)
        #expect(sends.dropFirst().map(\.held) == [1, 1])
        #expect(budget.snapshot.inUse == 2)
    }

    /// Random demands, outcomes and departures (seeded; the seed is printed): never more than the total held, never
    /// less than a send has in flight.
    @Test(arguments: [UInt64(1), 2, 3, 0xC0FFEE])
    func neverMoreThanTheTotal(seed: UInt64) {
        print("InFlightBudgetTests.neverMoreThanTheTotal seed \(seed)")
        var random = SeededRandomNumberGenerator(seed: seed)
        let budget = InFlightBudget(total: 500)
        var sends: [Sender] = []
        let lanes = SendLane.priorityOrder
        for _ in 0..<5000 {
            switch random.next() % 10 {
            case 0 where sends.count < 20:
                sends.append(
                    Sender(
                        budget, app: "app\(random.next() % 4)", lane: lanes[Int(random.next() % 4)],
                        weight: Double(1 + random.next() % 3)))
            case 1 where !sends.isEmpty:
                budget.leave(sends.remove(at: Int(random.next() % UInt64(sends.count))).flow)
            default:
                guard !sends.isEmpty else { continue }
                let send = sends[Int(random.next() % UInt64(sends.count))]
                let done = send.inUse == 0 ? 0 : Int(random.next() % UInt64(send.inUse + 1))
                send.recorded(done, stillWanting: Int(random.next() % 400))
            }
            let snapshot = budget.snapshot
            #expect(snapshot.inUse <= 500)
            #expect(sends.reduce(0) { $0 + $1.held } == snapshot.inUse)
            for send in sends { #expect(send.held >= send.inUse) }
        }
    }
}
