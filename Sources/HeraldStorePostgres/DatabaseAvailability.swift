import Synchronization

/// Whether the database is away: an operation lost its connection or ran out of time, or the pulse
/// (``DatabasePulse``) got no answer. (A wait for a connection that timed out is not enough: a pool busy with work, or
/// slow to open its first connections, times out too.) While it is away, operations wait for a connection and for its
/// answer ``PostgresStore/Configuration/awayTimeout`` at most, so an API request fails in about a second with a 503
/// rather than after the pool's timeouts; every operation still tries (half-open), and the first answer to one that
/// began after the database was found away ends the state.
final class DatabaseAvailability: Sendable {
    private struct State {
        var away = false
        /// Since when, while it is.
        var awaySince: ContinuousClock.Instant?
        /// How many times the database was found away: an answer to an operation that began before the last time says
        /// nothing about the database now (its statement may have been answered just before the restart).
        var losses = 0
        /// When an operation last got its answer; `nil` before the first (a pool still opening its connections).
        var lastAnswer: ContinuousClock.Instant?
    }

    /// What an operation notes as it begins, and passes to ``answered(since:)``.
    struct Mark: Sendable {
        fileprivate let losses: Int
    }

    private let state = Mutex(State())

    var isAway: Bool { state.withLock { $0.away } }

    /// Whether any operation got its answer yet.
    var hasAnswered: Bool { state.withLock { $0.lastAnswer != nil } }

    /// Notes when an operation begins.
    func mark() -> Mark { state.withLock { Mark(losses: $0.losses) } }

    /// An operation that began at `mark` got its answer.
    /// - Returns: How long the database was away, when this answer ended the state.
    @discardableResult
    func answered(since mark: Mark) -> Duration? {
        state.withLock { state in
            // Stale: the operation began before the database was last found away.
            guard mark.losses == state.losses else { return nil }
            let now = ContinuousClock.now
            state.lastAnswer = now
            guard state.away else { return nil }
            defer {
                state.away = false
                state.awaySince = nil
            }
            return state.awaySince.map { now - $0 } ?? .zero
        }
    }

    /// A statement got its answer: the database answers, whatever the operation's fate. (Per statement, not only per
    /// operation: a long operation, such as the migrations, answers all the time.)
    func heard() {
        state.withLock { $0.lastAnswer = .now }
    }

    /// Whether a statement or an operation got its answer after `instant`.
    func heard(since instant: ContinuousClock.Instant) -> Bool {
        state.withLock { state in state.lastAnswer.map { $0 > instant } ?? false }
    }

    /// An operation lost its connection or got no answer in time, or the pulse got no answer.
    /// - Returns: Whether the database was not away until now.
    @discardableResult
    func lost() -> Bool {
        state.withLock { state in
            guard !state.away else { return false }
            state.away = true
            state.awaySince = .now
            state.losses += 1
            return true
        }
    }

    /// Whether the pulse should ask the database: it is away (to notice its return at once); an operation waits and
    /// nothing got an answer for `quiet` (a path gone silent, a database stalled or gone — a busy store answers all the
    /// time); or nothing got an answer for `idle` (no operation would notice).
    func needsPulse(operationsWaiting: Bool, quiet: Duration, idle: Duration) -> Bool {
        state.withLock { state in
            guard !state.away, let last = state.lastAnswer else { return true }
            let silence = ContinuousClock.now - last
            return silence >= idle || (operationsWaiting && silence >= quiet)
        }
    }
}
