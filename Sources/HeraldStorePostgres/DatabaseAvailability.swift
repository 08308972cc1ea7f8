import Synchronization

/// Whether the database is away: an operation lost its connection or ran out of time. (A wait for a connection that
/// timed out is not enough: a pool busy with work, or slow to open its first connections, times out too.) While it is away, operations wait for a connection and for its answer
/// ``PostgresStore/Configuration/awayTimeout`` at most, so an API request fails in about a second with a 503 rather than
/// after the pool's timeouts; every operation still tries (half-open), and the first answer ends the state. The health
/// probe keeps trying while no request comes (``PostgresStore/Configuration/probeInterval``).
final class DatabaseAvailability: Sendable {
    private struct State {
        var away = false
        /// When an operation last got its answer; `nil` before the first (a pool still opening its connections).
        var lastAnswer: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    var isAway: Bool { state.withLock { $0.away } }

    /// An operation got its answer.
    func answered() {
        state.withLock { state in
            state.away = false
            state.lastAnswer = .now
        }
    }

    /// An operation lost its connection or got no answer in time.
    /// - Returns: Whether the database was not away until now.
    func lost() -> Bool {
        state.withLock { state in
            defer { state.away = true }
            return !state.away
        }
    }

    /// Whether the health probe should ask the database: it is away, or nothing got an answer within `interval` (a
    /// busy store answers all the time, and needs no probe that load could slow past its limit).
    func needsProbe(every interval: Duration) -> Bool {
        state.withLock { state in
            state.away || state.lastAnswer.map { ContinuousClock.now - $0 >= interval } ?? true
        }
    }

    /// The health probe got no connection: every connection is held by operations that get no answer — a path gone
    /// silent — when nothing at all was answered for `quiet`. Never before the first answer: a pool still opening its
    /// first connections (slow on a loaded machine) is not a database away.
    /// - Returns: Whether the database was not away until now and is now.
    func probeGotNoConnection(quiet: Duration) -> Bool {
        state.withLock { state in
            guard !state.away, let last = state.lastAnswer, ContinuousClock.now - last >= quiet else { return false }
            state.away = true
            return true
        }
    }
}
