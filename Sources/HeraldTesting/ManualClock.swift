import HeraldCore
import Synchronization

/// A `Clock` whose time moves only when a test moves it, so backoff waits and time limits are exact and tests never
/// sleep.
///
/// Two modes:
/// - By default a sleeper stays suspended until ``advance(by:)`` reaches its deadline. Use it to test a time limit:
///   start the work, ``waitForSleepers(count:)``, then advance.
/// - With `advancesAutomatically`, every `sleep` moves the clock to its deadline and returns at once. Use it for
///   retry loops, and read the waits they asked for in ``requestedSleeps``.
///
/// A cancelled sleeper throws `CancellationError`, as `ContinuousClock` does.
public final class ManualClock: Clock, Sendable {
    /// A point on the manual time line: an offset from the clock's start.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// How far after the clock's start.
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelledBeforeSuspending: Set<UInt64> = []
    }

    private let state = Mutex(State())
    private let sleepers = CountSignal()
    /// Appended under `state`'s lock, so that concurrent sleepers' requests keep their order.
    private let requests = WatchedState<[Duration]>([], readyWhen: { _ in false })
    private let advancesAutomatically: Bool

    /// - Parameter advancesAutomatically: whether every sleep returns at once, moving the clock to its deadline.
    public init(advancesAutomatically: Bool = false) {
        self.advancesAutomatically = advancesAutomatically
    }

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .zero }

    /// How long each sleep asked to wait, measured from the clock's time when it was called, in order.
    public var requestedSleeps: [Duration] { requests.value }

    /// Returns the waits asked for so far once they satisfy `condition` ("the last one is a second"), waking on each
    /// new sleep instead of polling; `nil` when the task is cancelled first.
    @discardableResult
    public func waitForRequestedSleeps(where condition: @escaping @Sendable ([Duration]) -> Bool) async -> [Duration]? {
        await requests.wait(until: condition)
    }

    /// How many sleepers are suspended now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            let requested = state.now.duration(to: deadline)
            requests.update { $0.append(requested) }
            if advancesAutomatically, state.now < deadline { state.now = deadline }
            return state.nextID
        }
        try Task.checkCancellation()
        if advancesAutomatically { return }

        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Next { case wait, resume, cancel }
                let next: Next = state.withLock { state in
                    if state.cancelledBeforeSuspending.remove(id) != nil { return .cancel }
                    if deadline <= state.now { return .resume }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    // Reported under the lock, so that concurrent sleepers report their counts in order.
                    sleepers.update(state.sleepers.count)
                    return .wait
                }
                switch next {
                case .wait: break
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelledBeforeSuspending.insert(id)
                    return Sleeper?.none
                }
                sleepers.update(state.sleepers.count)
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            sleepers.update(state.sleepers.count)
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Runs `body` while time keeps moving: now, and again each time a sleep is asked for, the clock moves forward by
    /// `step`. A background loop that reckoned its wait from another clock (a wall clock the test moved just before)
    /// may ask for its sleep after the test advanced this one; moving on each new sleep wakes it all the same, where
    /// a single advance would leave it asleep for good.
    public func advancing<Result>(by step: Duration, while body: () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                var seen = requestedSleeps.count
                while !Task.isCancelled {
                    advance(by: step)
                    let asked = seen
                    guard let requests = await waitForRequestedSleeps(where: { $0.count > asked }) else { return }
                    seen = requests.count
                }
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// Returns once at least `count` sleepers are suspended: the moment a test can advance past their deadlines.
    public func waitForSleepers(count: Int = 1) async {
        await sleepers.wait(untilAtLeast: count)
    }
}
