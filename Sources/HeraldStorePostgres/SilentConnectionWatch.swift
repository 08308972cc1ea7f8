import HeraldCore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Notices a pooled connection whose path went silent (a NAT or load balancer that lost its state drops its packets
/// both ways, without a reset) within seconds rather than at the operation's time limit.
///
/// An operation that has waited ``firstLook`` for its answer is looked up from another connection in
/// `pg_stat_activity`, by its connection's backend process: a backend that is gone, or that has been idle for
/// ``idleBeforeSilent`` — PostgreSQL waits for Herald's next message while Herald waits for PostgreSQL's answer — means
/// the messages are lost on the way, and the connection is closed (the operation fails with `timedOut`). A backend
/// still running the statement is a slow statement, left to its limit, and looked at again. New connections still
/// work, so the database is not away: only the operations on dead connections fail, each within seconds.
final class SilentConnectionWatch: Sendable {
    /// The watcher's own pool of one connection: a pool whose every connection is stuck still gets its answer.
    private let spare: SpareClient
    /// The backend process of each connection of the watched pool.
    let backends = Backends()

    init(configuration: PostgresClient.Configuration, logger: Logger) {
        spare = SpareClient(
            configuration: configuration, connectTimeout: Self.lookTimeout, keepsConnection: false, logger: logger)
    }

    /// Stops the watcher's connection.
    func stop() { spare.replace() }

    /// The most a look waits for its connection and its answer: past it, the look gives its connection up (its path
    /// may be silent too; the next look connects anew, and the store's pulse finds a partition) and tells nothing.
    static let lookTimeout: Duration = .seconds(2)

    /// Whether the backend process `pid` waits for Herald (gone, or idle for ``idleBeforeSilent``); `false` when the
    /// look gets no answer within ``lookTimeout``.
    func isSilent(_ pid: Int32, logger: Logger) async -> Bool {
        let silent = await Self.answer(
            from: spare.client, connectingWithin: Self.lookTimeout, answeringWithin: Self.lookTimeout
        ) { connection in
            let rows = try await connection.query(Self.lookStatement(pid: pid), logger: logger).collect()
            guard let row = rows.first else { return true }
            let (state, idle) = try row.decode((String?, Double?).self, context: .default)
            return Self.isSilent(state: state, idleSeconds: idle)
        }
        if silent == nil { spare.replace() }
        return silent ?? false
    }

    /// Runs `body` on a connection of `client` and returns its answer, or `nil` when it fails, when no connection comes
    /// within `connectLimit`, when `body` has no answer within `answerLimit` of getting its connection, or once
    /// `giveUp` says so: the connection is then closed, since a statement on a silent path is never answered, and the
    /// work left behind ends with it.
    static func answer<T: Sendable>(
        from client: PostgresClient, connectingWithin connectLimit: Duration, answeringWithin answerLimit: Duration,
        unlessGivenUp giveUp: (@Sendable () async -> Bool)? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async -> T? {
        let answer = OneShot<T?>()
        let attempt = Attempt()
        @Sendable func giveUpNow() {
            if answer.fulfil(nil), let connection = attempt.giveUp() {
                let closing: EventLoopFuture<Void> = connection.close()
                _ = closing
            }
        }
        Task {
            let value = try? await client.withConnection { connection -> T? in
                // Given up on while it waited for its connection: nothing runs on it.
                guard attempt.connected(connection) else { return nil }
                let timer = Task {
                    try await Self.sleep(answerLimit, whileResponsive: connection.eventLoop)
                    giveUpNow()
                }
                defer { timer.cancel() }
                return try await body(connection)
            }
            _ = answer.fulfil(value ?? nil)
        }
        let timers = Task {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    // Counted on a loop of the group the connection is opened on, as the answer's wait is.
                    let loop = MultiThreadedEventLoopGroup.singleton.any()
                    guard (try? await Self.sleep(connectLimit, whileResponsive: loop)) != nil, !attempt.hasConnected
                    else { return }
                    giveUpNow()
                }
                if let giveUp {
                    group.addTask { if await giveUp() { giveUpNow() } }
                }
            }
        }
        defer { timers.cancel() }
        return await answer.waitEvenIfCancelled()
    }

    /// Sleeps until `limit` of time has passed in which `eventLoop` — the one that would read the answer — ran on time,
    /// `limit` × ``mostStretch`` at most.
    ///
    /// On a loaded machine the event loop may not run for a second (a process busy with TLS handshakes and a send on
    /// two cores): an answer that arrived meanwhile waits unread in the socket, and a plain timer would call it missing
    /// and the database away. Time the loop ran late by is not counted.
    static func sleep(_ limit: Duration, whileResponsive eventLoop: any EventLoop) async throws {
        let step = Duration.milliseconds(50)
        let start = ContinuousClock.now
        var counted = Duration.zero
        while counted < limit, ContinuousClock.now - start < limit * mostStretch {
            try Task.checkCancellation()
            let before = ContinuousClock.now
            try await eventLoop.scheduleTask(in: .milliseconds(50)) {}.futureResult.get()
            // A step that took longer than twice its length ran late: the loop (or this process) was busy.
            counted += min(ContinuousClock.now - before, step * 2)
        }
    }

    /// How many times its limit a wait for an answer lasts at most on a loaded machine.
    static let mostStretch = 5

    /// An ``answer(from:connectingWithin:answeringWithin:unlessGivenUp:_:)`` under way: its connection once it has
    /// one, or that it was given up on first.
    private final class Attempt: Sendable {
        private enum Phase {
            case waiting
            case connected(PostgresConnection)
            case givenUp
        }

        private let phase = Mutex(Phase.waiting)

        var hasConnected: Bool {
            phase.withLock { if case .connected = $0 { true } else { false } }
        }

        /// The connection came; `false` when the attempt was given up on first.
        func connected(_ connection: PostgresConnection) -> Bool {
            phase.withLock { phase in
                guard case .waiting = phase else { return false }
                phase = .connected(connection)
                return true
            }
        }

        /// Gives the attempt up; returns its connection to close, if it has one.
        func giveUp() -> PostgresConnection? {
            phase.withLock { phase in
                defer { phase = .givenUp }
                if case .connected(let connection) = phase { return connection }
                return nil
            }
        }
    }

    /// When an operation waiting for its answer is first looked at, and then again.
    static let firstLook: Duration = .seconds(3)
    /// How long a backend must have been idle while its operation waits for the connection to count as silent:
    /// longer than Herald's code takes between two statements of a transaction, even on a loaded machine.
    static let idleBeforeSilent = 2.5

    /// The backend process of each connection of a pool, asked once per connection.
    final class Backends: Sendable {
        private let pids = Mutex<[PostgresConnection.ID: Int32]>([:])

        func pid(of connection: PostgresConnection, logger: Logger) async throws -> Int32 {
            if let pid = pids.withLock({ $0[connection.id] }) { return pid }
            let rows = try await connection.query("SELECT pg_backend_pid()", logger: logger).collect()
            let pid = try rows.first?.decode(Int32.self, context: .default) ?? 0
            pids.withLock { pids in
                // Connections come and go over days: the cache stays small.
                if pids.count >= 4_096 { pids.removeAll() }
                pids[connection.id] = pid
            }
            return pid
        }
    }

    /// The statement that tells whether a backend waits for its client: gone (no row), or idle for so many seconds.
    static func lookStatement(pid: Int32) -> PostgresQuery {
        """
        SELECT state, extract(epoch FROM clock_timestamp() - state_change)::float8 \
        FROM pg_stat_activity WHERE pid = \(pid)
        """
    }

    /// Whether a row of ``lookStatement(pid:)`` (or its absence) says the connection is silent.
    static func isSilent(state: String?, idleSeconds: Double?) -> Bool {
        guard let state else { return true }
        return state.hasPrefix("idle") && (idleSeconds ?? 0) >= idleBeforeSilent
    }
}
