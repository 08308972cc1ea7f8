import HeraldCore
import Logging
import PostgresNIO
import Synchronization

/// The connection pool in use, and — when the database URL names several hosts — which host it connects to.
///
/// Like libpq with `target_session_attrs`, the pool uses the first host in the list that accepts a connection (and,
/// for `read-write`, writes: `SHOW transaction_read_only` answers `off`). It stays on that host while it answers:
/// a primary that comes back writable after a failover (split brain) does not win the pool back. When the host in use
/// goes away or refuses writes, the hosts are tried again, in order, every ``lookInterval`` (a host refusing TCP
/// connections is passed over at once); a standby promoted by a failover is found within half a second of its promotion, and the operations then go to a new pool on it. The old
/// pool stops once its operations have ended (they fail fast: their host is away).
final class DatabaseHosts: Sendable {
    /// A pool on one host.
    final class Pool: Sendable {
        /// `nil` for the one host of a single-host configuration.
        let host: PostgresStore.Configuration.Host?
        let client: PostgresClient
        /// What `client` was made with: a pool renewed on the same host gets the same.
        let configuration: PostgresClient.Configuration
        /// The operations using the pool: it stops once there are none.
        let operations = InFlightOperations()
        /// Looks at its connections' backends from a connection of its own (``SilentConnectionWatch``).
        let watch: SilentConnectionWatch
        /// Tells whether the host answers at all, from a connection of its own (``DatabasePulse``).
        let pulse: DatabasePulse
        /// The connections Herald is closing under their operations.
        let closing: ClosingConnections
        /// When it was made: a pool made while the database was away has nothing to renew on its return.
        let made = ContinuousClock.now
        private let task = Mutex<Task<Void, Never>?>(nil)

        /// - Parameter endpoint: The host `configuration` connects to, when known.
        init(
            host: PostgresStore.Configuration.Host?, endpoint: PostgresStore.Configuration.Host?,
            configuration: PostgresClient.Configuration, logger: Logger
        ) {
            self.host = host
            self.configuration = configuration
            self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
            self.watch = SilentConnectionWatch(configuration: configuration, logger: logger)
            self.pulse = DatabasePulse(configuration: configuration, endpoint: endpoint, logger: logger)
            self.closing = ClosingConnections(client: client)
        }

        /// Runs the pool in a task of its own (see ``PostgresStore/run()`` for why detached).
        func start() {
            let client = self.client
            task.withLock { task in
                guard task == nil else { return }
                task = Task.detached { await client.run() }
            }
            pulse.start()
        }

        /// Stops the pool and waits for it, `limit` at most: postgres-nio closes each connection politely (a
        /// `Terminate` message, then the server's close), and on a path gone silent that never ends. The process
        /// exits anyway; a stop must not wait for the network.
        /// - Returns: Whether the pool stopped within `limit`.
        @discardableResult
        func stop(within limit: Duration = .seconds(2)) async -> Bool {
            closing.stop()
            pulse.stop()
            watch.stop()
            guard let running = task.withLock({ $0 }) else { return true }
            running.cancel()
            let stopped = OneShot<Bool>()
            Task {
                await running.value
                _ = stopped.fulfil(true)
            }
            let timer = Task {
                try await Task.sleep(for: limit)
                _ = stopped.fulfil(false)
            }
            defer { timer.cancel() }
            return await stopped.waitEvenIfCancelled()
        }
    }

    private struct State {
        var current: Pool
        var retired: [Pool] = []
        /// Whether the host in use should be looked for again: it refused a write.
        var refusedWrites = false
        /// Whether the log said no host suits, since one last did: said once per outage.
        var saidNoHostSuits = false
    }

    private let state: Mutex<State>
    /// Whether the first host has been chosen; operations wait for it.
    private let chosen: WatchedState<Bool>
    private let hosts: [PostgresStore.Configuration.Host]
    private let attributes: PostgresStore.Configuration.TargetSessionAttributes
    private let base: PostgresClient.Configuration
    /// postgres-nio's connection events.
    private let logger: Logger
    /// Which host the pool uses.
    private let events: Logger

    /// How often the hosts are looked at again while the one in use is away or refused a write: a promoted standby is
    /// used within this of its promotion (a host that refuses connections is passed over at once).
    static let lookInterval: Duration = .milliseconds(250)

    /// The most a host check waits for its connection, and then for its answer.
    static let checkTimeout: Duration = .seconds(2)

    /// - Parameters:
    ///   - base: The pool's configuration; each host's pool connects to that host with everything else the same.
    ///   - hosts: The hosts of the URL; several to choose from, one (the host `base` connects to), or none (not known).
    init(
        base: PostgresClient.Configuration, hosts: [PostgresStore.Configuration.Host],
        attributes: PostgresStore.Configuration.TargetSessionAttributes, logger: Logger, events: Logger
    ) {
        self.events = events
        self.base = base
        self.hosts = hosts.count > 1 ? hosts : []
        self.attributes = attributes
        self.logger = logger
        let first = Pool(
            host: self.hosts.first, endpoint: hosts.first, configuration: base, logger: logger)
        state = Mutex(State(current: first))
        chosen = WatchedState(self.hosts.isEmpty, readyWhen: { $0 })
    }

    /// Whether the configuration names several hosts to choose from.
    var choosesHosts: Bool { !hosts.isEmpty }

    /// The pool to use, once the first host has been chosen (at once with one host).
    func current() async -> Pool {
        await chosen.wait()
        return state.withLock { $0.current }
    }

    /// Starts the current pool.
    func start() {
        state.withLock { $0.current }.start()
    }

    /// Stops every pool, 2 seconds at most each (``Pool/stop(within:)``).
    func stop() async {
        let pools = state.withLock { [$0.current] + $0.retired }
        for pool in pools where !(await pool.stop()) {
            events.warning(
                "The connections to \(pool.host.map { "\($0)" } ?? "the database") did not close within 2 s (the path to it is silent): stopping without waiting for them")
        }
    }

    /// The host in use refused a write (SQLSTATE 25006): it may have become a standby.
    func refusedWrite() {
        state.withLock { $0.refusedWrites = true }
    }

    /// Chooses the first host, then looks for another every `interval` while `isAway()` or the host refused writes,
    /// until cancelled.
    func follow(every interval: Duration, isAway: @escaping @Sendable () -> Bool) async {
        guard choosesHosts else { return }
        await choose()
        chosen.update { $0 = true }
        while (try? await Task.sleep(for: interval)) != nil {
            let refused = state.withLock { state in
                defer { state.refusedWrites = false }
                return state.refusedWrites
            }
            guard refused || isAway() else { continue }
            await choose()
        }
    }

    /// Tries the hosts in order and moves the pool to the first that suits; stays where it is when none does.
    private func choose() async {
        let current = state.withLock { $0.current }
        for host in hosts {
            guard await Self.suits(host, base: base, attributes: attributes, logger: logger) else { continue }
            if host != current.host { move(to: host) }
            state.withLock { $0.saidNoHostSuits = false }
            return
        }
        guard state.withLock({ state in
            defer { state.saidNoHostSuits = true }
            return !state.saidNoHostSuits
        }) else { return }
        events.warning(
            "No host of the database URL accepts \(attributes == .readWrite ? "writes" : "connections") now: tried \(hosts.map(\.description).joined(separator: ", ")). Herald keeps trying."
        )
    }

    private func move(to host: PostgresStore.Configuration.Host) {
        let old = replace(
            with: Pool(host: host, endpoint: host, configuration: Self.configuration(base, on: host), logger: logger))
        events.notice(
            "The database moved: Herald now uses \(host)\(old?.host.map { " instead of \($0)" } ?? "")\(attributes == .readWrite ? ", the host that accepts writes" : "").")
    }

    /// Replaces the pool in use by a new pool on the same host (the database came back: see
    /// ``PostgresStore``'s `foundBack(after:)`).
    /// - Returns: Whether it was replaced: not when it was made after `instant` (a move to another host, meanwhile).
    func renewCurrent(ifMadeBefore instant: ContinuousClock.Instant) -> Bool {
        let pool = state.withLock { $0.current }
        guard pool.made < instant else { return false }
        return replace(
            with: Pool(host: pool.host, endpoint: pool.pulse.endpoint, configuration: pool.configuration, logger: logger),
            ifCurrent: pool) != nil
    }

    /// Puts `pool` in use (unless the one in use is not `expected`); the one it replaces stops once its operations
    /// have ended.
    /// - Returns: The pool replaced; `nil` when `pool` was not put in use.
    @discardableResult
    private func replace(with pool: Pool, ifCurrent expected: Pool? = nil) -> Pool? {
        pool.start()
        let replaced = state.withLock { state -> Pool? in
            guard expected.map({ $0 === state.current }) ?? true else { return nil }
            defer {
                state.retired.append(state.current)
                state.current = pool
            }
            return state.current
        }
        guard let old = replaced else {
            Task { await pool.stop() }
            return nil
        }
        // Its waiting operations fail within their limits: it opens no connection for them.
        old.closing.stop()
        Task {
            // The operations on the old pool fail fast (its host is away or refuses writes); then it stops.
            _ = await old.operations.drained(within: .seconds(60))
            await old.stop()
            state.withLock { state in state.retired.removeAll { $0 === old } }
        }
        return old
    }

    static func configuration(_ base: PostgresClient.Configuration, on host: PostgresStore.Configuration.Host)
        -> PostgresClient.Configuration
    {
        var configuration = PostgresClient.Configuration(
            host: host.name, port: host.port, username: base.username, password: base.password,
            database: base.database, tls: base.tls)
        configuration.options = base.options
        return configuration
    }

    /// Whether `host` accepts a connection within ``checkTimeout`` and, for `.readWrite`, writes. The check runs in a
    /// pool of its own, in a task that is never cancelled (postgres-nio may never answer a cancelled lease): a host
    /// that does not answer in time is left to its pool's own timeout.
    private static func suits(
        _ host: PostgresStore.Configuration.Host, base: PostgresClient.Configuration,
        attributes: PostgresStore.Configuration.TargetSessionAttributes, logger: Logger
    ) async -> Bool {
        var configuration = configuration(base, on: host)
        configuration.options.minimumConnections = 0
        configuration.options.maximumConnections = 1
        configuration.options.connectTimeout = checkTimeout
        configuration.options.keepAliveBehavior = nil
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let pool = Task.detached { await client.run() }
        // A host that refuses TCP connections is down: postgres-nio's pool would keep trying it for the whole limit.
        let suits = await SilentConnectionWatch.answer(
            from: client, connectingWithin: checkTimeout, answeringWithin: checkTimeout,
            unlessGivenUp: { await DatabasePulse.refuses(host) }
        ) { connection in
            let rows = try await connection.query("SHOW transaction_read_only", logger: logger).collect()
            let readOnly = try rows.first?.decode(String.self, context: .default)
            return attributes == .any || readOnly == "off"
        }
        pool.cancel()
        return suits ?? false
    }
}
