package import HeraldStore
import Synchronization

/// The instance's notifications in flight (`HERALD_SEND_CONCURRENCY`), shared by every send it runs at once.
///
/// A permit stands for one notification from the moment it is sent until its outcome is committed, so the budget
/// bounds both APNs's load and what a `kill -9` can make the instance send twice. Sends share it by **weighted
/// max-min fairness** (water-filling), recomputed whenever a send's demand changes:
///
/// 1. Lanes in ``SendLane/priorityOrder`` are served one after the other: a lane gets what it asks for before a later
///    lane gets anything, so a Live Activity update or a send to one user never waits behind a campaign's window.
/// 2. Within a lane, apps by ``HeraldStore/AppPriority`` (`sendPriority`) the same way: `high` apps get what they ask
///    for before `normal` ones get anything, and `low` ones come last.
/// 3. Within a priority, each app gets a share in proportion to its weight (`sendWeight`, default 1), split evenly
///    between its sends, and a send's share between its runs (the shards of a large send this instance runs at once); a send
///    that asks for less than its share (a paced send holds only what its `rate` needs) leaves the
///    rest to the others, so the budget is never idle while some send could use it.
///
/// A send above its share keeps what it has in flight — nothing is taken back from APNs — and gets no more until its
/// in-flight count falls to its share: shares move within one round trip of the notifications in flight. Deficit
/// round robin would hand out the same shares over time; water-filling gives them at once, with no per-permit queue.
///
/// Sends report what they use and want with ``update(_:inUse:wanted:)``, which answers how many permits they gained
/// (or gave back); permits that free up later reach a waiting send through the `granted` callback it joined with.
package final class InFlightBudget: Sendable {
    /// An app's claim on the budget against other apps of a lane.
    package struct AppShare: Sendable, Hashable {
        /// Served before (or after) other apps' sends of the lane.
        package var priority: AppPriority
        /// Its share against apps of the same priority, more than 0.
        package var weight: Double

        package init(priority: AppPriority = .normal, weight: Double = 1) {
            precondition(weight > 0, "an app's weight is more than 0")
            self.priority = priority
            self.weight = weight
        }
    }

    /// One send's membership in the budget.
    package struct Flow: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    /// What the budget holds now: for metrics and the send API.
    package struct Snapshot: Sendable, Hashable {
        /// The instance's total.
        package var total: Int
        /// Permits held by sends: notifications in flight or about to be sent.
        package var inUse: Int
        /// Sends in the budget.
        package var flows: Int
        /// Sends that want more than they hold.
        package var waiting: Int
        /// Permits held per lane.
        package var inUseByLane: [SendLane: Int]
    }

    private struct Member {
        let app: String
        let send: SendID?
        let lane: SendLane
        let share: AppShare
        let granted: @Sendable (Int) -> Void
        var held = 0
        var inUse = 0
        var wanted = 0
        /// The most it may hold now: its fair share, or what it wants when that is less.
        var cap = 0
    }

    private struct State {
        var free: Int
        var members: [UInt64: Member] = [:]
        var nextID: UInt64 = 0
    }

    /// The instance's total: the most notifications in flight at once across every send.
    package let total: Int
    private let state: Mutex<State>

    /// - Parameter total: At least 1.
    package init(total: Int) {
        precondition(total >= 1, "a budget of at least one notification")
        self.total = total
        state = Mutex(State(free: total))
    }

    /// Adds a send to the budget. It holds nothing until it asks with ``update(_:inUse:wanted:)``.
    /// - Parameters:
    ///   - app: The app (bundle id) the send is for: shares are split between apps first.
    ///   - send: The send, when several runs (shards) of one send may join: they share one send's part.
    ///   - lane: The send's lane.
    ///   - share: The app's priority and weight.
    ///   - granted: Called with permits given to the send after it asked for more than it got, from whichever
    ///     thread freed them, never under the budget's lock; it must not block (push an event to the send's queue).
    package func join(
        app: String, send: SendID? = nil, lane: SendLane, share: AppShare = AppShare(),
        granted: @escaping @Sendable (Int) -> Void
    ) -> Flow {
        state.withLock { state in
            state.nextID += 1
            state.members[state.nextID] = Member(app: app, send: send, lane: lane, share: share, granted: granted)
            return Flow(id: state.nextID)
        }
    }

    /// Tells the budget what a send uses and wants, and adjusts what it holds.
    /// - Parameters:
    ///   - inUse: Permits of the send in flight now (sent, outcome not yet committed): never taken back.
    ///   - wanted: What it could use now: `inUse` plus the notifications it could start at once.
    /// - Returns: Permits gained (positive) or given back (negative, only ones not in use).
    package func update(_ flow: Flow, inUse: Int, wanted: Int) -> Int {
        let (delta, grants) = state.withLock { state -> (Int, [(@Sendable (Int) -> Void, Int)]) in
            guard var member = state.members[flow.id] else { return (0, []) }
            member.inUse = inUse
            member.wanted = max(wanted, inUse)
            state.members[flow.id] = member
            Self.allocate(&state, total: total)
            member = state.members[flow.id]!
            let keep = max(inUse, min(member.wanted, member.cap))
            var delta = 0
            if member.held > keep {
                delta = keep - member.held
            } else if member.held < keep {
                delta = min(keep - member.held, state.free)
            }
            member.held += delta
            state.free -= delta
            state.members[flow.id] = member
            // Caps moved: free permits may now go to another send.
            return (delta, Self.distribute(&state, except: flow.id))
        }
        for (granted, count) in grants { granted(count) }
        return delta
    }

    /// Takes a send out of the budget and frees everything it held.
    package func leave(_ flow: Flow) {
        let grants = state.withLock { state -> [(@Sendable (Int) -> Void, Int)] in
            guard let member = state.members.removeValue(forKey: flow.id) else { return [] }
            state.free += member.held
            Self.allocate(&state, total: total)
            return Self.distribute(&state, except: nil)
        }
        for (granted, count) in grants { granted(count) }
    }

    /// What the budget holds now.
    package var snapshot: Snapshot {
        state.withLock { state in
            var byLane: [SendLane: Int] = [:]
            for member in state.members.values where member.held > 0 { byLane[member.lane, default: 0] += member.held }
            return Snapshot(
                total: total, inUse: total - state.free, flows: state.members.count,
                waiting: state.members.values.filter { $0.wanted > $0.held }.count, inUseByLane: byLane)
        }
    }

    /// Gives free permits to the sends below their cap that want more, earlier lanes and higher priorities first.
    private static func distribute(_ state: inout State, except skipped: UInt64?)
        -> [(@Sendable (Int) -> Void, Int)]
    {
        guard state.free > 0 else { return [] }
        var grants: [(@Sendable (Int) -> Void, Int)] = []
        func rank(_ id: UInt64) -> (Int, Int, UInt64) {
            let member = state.members[id]!
            return (member.lane.rank, member.share.priority.rank, id)
        }
        let order = state.members.keys.filter { $0 != skipped }.sorted { rank($0) < rank($1) }
        for id in order where state.free > 0 {
            var member = state.members[id]!
            let room = min(member.cap, member.wanted) - member.held
            guard room > 0 else { continue }
            let count = min(room, state.free)
            member.held += count
            state.free -= count
            state.members[id] = member
            grants.append((member.granted, count))
        }
        return grants
    }

    /// Sets every send's cap: lanes in priority order, apps' priorities in order within a lane, and within those
    /// weighted water-filling over the sends' demands (an app's weight split evenly between its sends in the lane). A
    /// send that wants anything may hold at least one, so none starves when there are more sends than permits.
    private static func allocate(_ state: inout State, total: Int) {
        var remaining = Double(total)
        for lane in SendLane.priorityOrder + [.inline] {
            for priority in AppPriority.allCases {
                let ids = state.members.keys.filter {
                    state.members[$0]!.lane == lane && state.members[$0]!.share.priority == priority
                }
                guard !ids.isEmpty else { continue }
                remaining = fill(&state, ids, with: remaining)
            }
        }
    }

    /// Weighted water-filling of `available` permits over some sends of one lane and priority; returns what is left.
    private static func fill(_ state: inout State, _ ids: [UInt64], with available: Double) -> Double {
        // A run without a send id is a send of its own.
        func sendKey(_ id: UInt64) -> String { state.members[id]!.send?.description ?? "#\(id)" }
        var runsPerSend: [String: Int] = [:]
        var sendsPerApp: [String: Set<String>] = [:]
        for id in ids {
            runsPerSend[sendKey(id), default: 0] += 1
            sendsPerApp[state.members[id]!.app, default: []].insert(sendKey(id))
        }
        func weight(_ id: UInt64) -> Double {
            let member = state.members[id]!
            return member.share.weight / Double(sendsPerApp[member.app]!.count) / Double(runsPerSend[sendKey(id)]!)
        }
        // Smallest demand per weight first: each either gets all it wants, or the rest share what is left.
        var pending = ids.sorted {
            let left = Double(state.members[$0]!.wanted) / weight($0)
            let right = Double(state.members[$1]!.wanted) / weight($1)
            return (left, $0) < (right, $1)
        }[...]
        var pendingWeight = pending.reduce(0) { $0 + weight($1) }
        var left = available
        while let id = pending.first {
            let share = left * weight(id) / pendingWeight
            let wanted = Double(state.members[id]!.wanted)
            if wanted <= share {
                state.members[id]!.cap = Int(wanted)
                left -= wanted
                pendingWeight -= weight(id)
                pending = pending.dropFirst()
            } else {
                // Nobody after this one wants less than its share: they all get their share.
                for id in pending {
                    state.members[id]!.cap = max(Int(left * weight(id) / pendingWeight), 1)
                }
                left = 0
                pending = []
            }
        }
        return max(left, 0)
    }
}
