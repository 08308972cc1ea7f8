import Synchronization

/// Whether the database is away: an operation lost its connection or ran out of time. (A wait for a connection that
/// timed out is not enough: a pool busy with work, or slow to open its first connections, times out too.) While it is away, operations wait for a connection and for its answer
/// ``PostgresStore/Configuration/awayTimeout`` at most, so an API request fails in about a second with a 503 rather than
/// after the pool's timeouts; every operation still tries (half-open), and the first answer ends the state. The health
/// probe keeps trying while no request comes (``PostgresStore/Configuration/probeInterval``).
final class DatabaseAvailability: Sendable {
    private struct State {
        var away = false
        var lastAnswer = ContinuousClock.now
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
        state.withLock { $0.away || ContinuousClock.now - $0.lastAnswer >= interval }
    }
}
