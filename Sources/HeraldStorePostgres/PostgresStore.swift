import Foundation
public import HeraldCore
public import HeraldStore
public import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The backend for several server instances: PostgreSQL through a pool of connections (postgres-nio's
/// `PostgresClient`).
///
/// Writes are transactions that lock the rows they read (`SELECT … FOR UPDATE`), so instances can register,
/// invalidate and record concurrently; workers claim sends with `FOR UPDATE SKIP LOCKED`. Concurrent registrations
/// and inline sends are stored together, one transaction per batch (``GroupCommit``). Migrations run in one
/// transaction under an advisory lock, so instances that start together apply them once.
///
/// ```swift
/// let store = try PostgresStore(url: "postgres://herald:secret@127.0.0.1:5432/herald")
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { try await store.run() }   // the pool works only while run() runs
///     try await store.migrate()
///     …
///     group.cancelAll()
/// }
/// ```
public final class PostgresStore: Store, VersionedMigrations {
    /// What the store was created with.
    public let configuration: Configuration
    /// The pool, on the host in use.
    let databaseHosts: DatabaseHosts
    package let clock: any WallClock
    let logger: Logger
    /// Where the store says what it did about the database: which host it uses, its instance lock lost and taken again.
    let events: Logger
    /// Gathers concurrent registrations into one call; runs while ``run()`` runs.
    let registrations = GroupCommit<PendingRegistration, UpsertResult>(
        stopped: "The PostgreSQL store stopped before storing the registration: nothing was stored. Register again.",
        stoppedInFlight:
            "The PostgreSQL store stopped while storing the registration: it may or may not be stored. Register again.",
        order: PendingRegistration.lockOrder)
    /// Gathers concurrent inline sends' records into one call; runs while ``run()`` runs.
    let finishedSends = GroupCommit<FinishedSend, Result<SendRecord, StoreError>>(
        stopped: "The PostgreSQL store stopped before recording the send: it was sent, and not recorded.",
        stoppedInFlight:
            "The PostgreSQL store stopped while recording the send: it was sent, and may or may not be recorded.",
        order: FinishedSend.lockOrder)
    /// Gathers concurrent reads of devices by token (one per inline send) into one query; runs while ``run()`` runs.
    let deviceReads = GroupCommit<DeviceToken, DeviceRegistration?>(
        stopped: "The PostgreSQL store stopped before reading the device: try again once it runs.",
        stoppedInFlight: "The PostgreSQL store stopped while reading the device: try again once it runs.",
        order: { Array($0.indices) })
    /// Which event types webhook endpoints want, as last read (``Session/writeWebhookEvents(_:)``).
    let webhookSubscriptions = WebhookSubscriptionCache()
    private let closed = Mutex(false)
    /// The operations holding or waiting for a connection: the pool stops only once there are none.
    private let operations = InFlightOperations()
    /// The acquire timeouts of the operations waiting for a connection, and the time limits of those running; watched
    /// while ``run()`` runs.
    private let deadlines = AcquireDeadlines()
    /// Whether the database is away now: operations then fail within ``Configuration/awayTimeout``.
    let availability = DatabaseAvailability()
    /// What the pulse found so far; tests wait on it.
    package let pulseStatistics = WatchedState(PulseStatistics(), readyWhen: { _ in true })

    /// What ``pulse(idle:)`` found.
    package struct PulseStatistics: Sendable {
        /// Asks answered.
        package var answered = 0
        /// Asks that got no answer (with a connection or without).
        package var unanswered = 0
        /// Asks whose question reached the database and got no answer in time.
        package var slow = 0
        /// Times the database was found away, by the pulse or by an operation.
        package var foundAway = 0
        /// Times it was found back.
        package var foundBack = 0
        /// Times the connections opened before were found silent while a new one answered.
        package var silentPaths = 0
        /// Pools replaced by a new one on the database's return.
        package var renewedPools = 0
    }

    /// Whether the database is away now (``DatabaseAvailability``).
    package var isDatabaseAway: Bool { availability.isAway }

    /// The first key of `pg_advisory_xact_lock(int, int)` for migrations: the bytes of "hrld". The second is the
    /// schema's `hashtext`, so instances migrating one schema wait for each other, and other schemas do not wait.
    private static let migrationLock: Int32 = 0x68_72_6c_64

    /// Creates the store and its pool. No connection is opened until ``run()`` runs and a query needs one.
    /// - Parameters:
    ///   - configuration: Server, pool, schema and clock.
    ///   - logger: Where postgres-nio logs connection events; nothing by default. Herald never logs queries.
    ///   - events: Where the store says what it did about the database: which host it uses, of several.
    public init(
        configuration: Configuration,
        logger: Logger = Logger(
            label: "herald.store",
            factory: { _ in
                SwiftLogNoOpLogHandler()
            }),
        events: Logger? = nil
    ) {
        var clientConfiguration = configuration.client
        // Herald's statements read a page or a shard at a time, in milliseconds; PostgreSQL's JIT compiles a statement
        // whose estimated cost passes a threshold, which the per-device rule probes (preferences, quiet hours) pass
        // at a million devices, and the compile took 0.4-1 s of every 15 ms page of a send.
        clientConfiguration.options.additionalStartupParameters.append(("jit", "off"))
        if let schema = configuration.schema {
            clientConfiguration.options.additionalStartupParameters.append(("search_path", schema))
        }
        self.configuration = configuration
        self.databaseHosts = DatabaseHosts(
            base: clientConfiguration, hosts: configuration.hosts, attributes: configuration.targetSessionAttributes,
            logger: logger, events: events ?? logger)
        self.clock = configuration.clock
        self.logger = logger
        self.events = events ?? logger
    }

    /// Creates the store for a URL (`postgres://user:password@host:port/database`).
    /// - Parameter events: Where the store says what it did about the database (see ``init(configuration:logger:events:)``).
    public convenience init(url: String, clock: any WallClock = SystemWallClock(), events: Logger? = nil) throws {
        self.init(configuration: try Configuration(url: url, clock: clock), events: events)
    }

    // MARK: Lifecycle

    /// Runs the connection pool, the group commits of registrations and inline sends, the batched reads of devices by
    /// token, and the watch of acquire timeouts, until graceful shutdown or cancellation. Queries and registrations
    /// wait for it.
    ///
    /// Stopping refuses new operations, lets those in flight end (they are cancelled with the caller's task, or finish
    /// their statement), and only then stops the pool. postgres-nio's pool, stopped under an operation, closes its
    /// connection without ever answering the statement in flight on it, and that operation would wait forever: a
    /// cancelled test, or a second SIGTERM, could then never end. The pool therefore runs in a task of its own that only
    /// this method stops (a detached one: it must not see the caller's cancellation or graceful shutdown first).
    public func run() async throws {
        databaseHosts.start()
        // Until the operations in flight have drained, after the group below.
        let deadlines = self.deadlines
        let watch = Task { await deadlines.run() }
        await withDiscardingTaskGroup { group in
            group.addTask {
                await self.registrations.run(
                    storeBatch: { try await self.storeRegistrations($0) },
                    storeOne: { try await self.storeRegistration($0) })
            }
            group.addTask {
                await self.deviceReads.run(
                    storeBatch: { try await self.readDevices($0) }, storeOne: { try await self.readDevice($0) })
            }
            group.addTask {
                await self.finishedSends.run(
                    storeBatch: { try await self.storeFinishedSends($0) },
                    storeOne: { try await self.storeFinishedSend($0) })
            }
            if let interval = configuration.probeInterval {
                group.addTask { await self.pulse(idle: interval) }
            }
            if databaseHosts.choosesHosts {
                group.addTask {
                    await self.databaseHosts.follow(every: DatabaseHosts.lookInterval) {
                        self.availability.isAway
                    }
                }
            }
            // Until graceful shutdown or cancellation.
            let (stop, stopper) = AsyncStream<Never>.makeStream()
            await cancelWhenGracefulShutdown { for await _ in stop {} }
            stopper.finish()
            closed.withLock { $0 = true }
            group.cancelAll()
        }
        // In a task of its own: this one may be cancelled, and the wait must not end with it.
        let operations = self.operations
        if await !Task(operation: { await operations.drained(within: .seconds(10)) }).value {
            logger.warning(
                "PostgreSQL operations still running 10 s after the store stopped: closing the pool under them")
        }
        watch.cancel()
        await databaseHosts.stop()
    }

    /// What the group commit of registrations did so far; tests wait on it.
    package var registrationCommits: WatchedState<GroupCommitStatistics> { registrations.statistics }

    /// What the batched reads of devices by token did so far; tests wait on it.
    package var deviceReadCommits: WatchedState<GroupCommitStatistics> { deviceReads.statistics }

    /// What the group commit of inline sends did so far; tests wait on it.
    package var finishedSendCommits: WatchedState<GroupCommitStatistics> { finishedSends.statistics }

    public func migrate() async throws {
        try await migrate(through: StoreSchema.latestVersion)
    }

    package func migrate(through version: Int) async throws {
        let now = StoreTime.microseconds(clock.now())
        let schema = configuration.schema
        do {
            try await transaction("apply migrations", limited: false) { session in
                // The schema name was checked against [a-z][a-z0-9_]* when the configuration was made.
                try await session.execute(
                    "SELECT pg_advisory_xact_lock(\(Self.migrationLock), hashtext('\(schema ?? "public")'))")
                if let schema {
                    try await session.execute("CREATE SCHEMA IF NOT EXISTS \(schema)")
                }
                try await session.execute(StoreSchema.createMigrationsTable)
                let applied = Set(try await session.rows(StoreSchema.selectVersions).map { Int(try $0.integer(0)) })
                for migration in try Migration.pending(StoreSchema.migrations, applied: applied)
                where migration.version <= version {
                    for statement in migration.statements + migration.postgresStatements {
                        // A server stopped while it migrates (a second SIGTERM, a test's cancellation) rolls back
                        // after the statement that runs, not after every migration still to apply.
                        try session.checkCallerCancelled()
                        try await session.execute(statement)
                    }
                    try await session.execute(StoreSchema.recordMigration(migration, at: now, .postgres))
                }
            }
        } catch let error as StoreError where error.code == .backend {
            throw StoreError(
                .migrationFailed,
                "Migrating the PostgreSQL database failed and nothing was changed: \(error.message)",
                underlying: error.underlying)
        }
    }

    package func executeRaw(_ statements: [String]) async throws {
        try await transaction("run raw statements") { session in
            for statement in statements { try await session.execute(statement) }
        }
    }

    package func rowCounts() async throws -> [String: Int] {
        try await session("count rows") { session in
            let tables = try await session.rows(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            ).map { try $0.text(0) }
            var counts: [String: Int] = [:]
            for table in tables {
                counts[table] = Int(try await session.rows("SELECT count(*) FROM \"\(table)\"")[0].integer(0))
            }
            return counts
        }
    }

    public func health() async throws -> StoreHealth {
        let version = try await session("check health") { session -> Int in
            let tables = try await session.rows(
                """
                SELECT count(*) FROM information_schema.tables \
                WHERE table_schema = current_schema() AND table_name = 'herald_migrations'
                """)
            guard try tables[0].integer(0) > 0 else { return 0 }
            return Int(try await session.rows("SELECT coalesce(max(version), 0) FROM herald_migrations")[0].integer(0))
        }
        return StoreHealth(backend: "postgres", schemaVersion: version, latestSchemaVersion: StoreSchema.latestVersion)
    }

    /// Refuses further calls. The pool's connections close when ``run()`` ends.
    public func close() async {
        closed.withLock { $0 = true }
    }

    // MARK: Access

    /// A connection leased for one operation, and the logger its queries use.
    struct Session {
        let connection: PostgresConnection
        let logger: Logger
        /// The lease this session runs under: ``whileCallerWaits(_:)`` runs code the caller may cancel.
        let lease: LeaseState
        /// Told of every statement answered.
        let availability: DatabaseAvailability
        /// Which event types some webhook endpoint wants, as last read: lets a write of events nobody wants skip the
        /// read of the endpoints (``writeWebhookEvents(_:)``).
        let webhookSubscriptions: WebhookSubscriptionCache
        let clock: any WallClock

        /// Runs `body` (the caller's code, such as the work done under an instance lock) so that the caller's
        /// cancellation reaches it, unlike the session's statements.
        func whileCallerWaits<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
            try await lease.cancellableByCaller(body)
        }

        /// Throws `CancellationError` when the caller was cancelled: for work of many statements, between two of them
        /// (a statement already sent runs to its end, since postgres-nio never answers one cancelled while it runs).
        func checkCallerCancelled() throws {
            if lease.isCallerCancelled { throw CancellationError() }
        }

        func rows(_ statement: SQLStatement) async throws -> [PostgresRandomAccessRow] {
            try ensureConnected()
            let rows = try await connection.rows(statement, logger: logger)
            availability.heard()
            return rows
        }

        func rows(_ statement: SQLArrayStatement) async throws -> [PostgresRandomAccessRow] {
            try ensureConnected()
            let rows = try await connection.rows(statement, logger: logger)
            availability.heard()
            return rows
        }

        func rows(_ sql: String) async throws -> [PostgresRandomAccessRow] {
            try await rows(SQLStatement(.postgres, sql))
        }

        func execute(_ statement: SQLStatement) async throws {
            try ensureConnected()
            try await connection.execute(statement, logger: logger)
            availability.heard()
        }

        func execute(_ sql: String) async throws {
            try await execute(SQLStatement(.postgres, sql))
        }

        /// Whether the connection is still open. A session held for long (an instance's lock, a `LISTEN`) outlives
        /// its connection when the database restarts; a statement sent on a closed connection may never be answered.
        var isConnected: Bool { !connection.isClosed }

        private func ensureConnected() throws {
            guard connection.isClosed else { return }
            throw StoreError(
                .unavailable,
                "PostgreSQL closed this connection (a restart, a failover, or a network fault): the operation was not run.")
        }
    }

    /// Runs a transaction on a pooled connection: committed when `body` returns, rolled back when it throws.
    /// - Parameter limited: Whether the operation has ``Configuration/operationTimeout`` (all but the migrations).
    func transaction<T: Sendable>(
        _ action: String, limited: Bool = true, _ body: @escaping @Sendable (Session) async throws -> T
    ) async throws -> T {
        let watchesSilence = configuration.watchesSilentConnections
        return try await leased(action, limited: limited) { pool, logger, lease in
            // Leased first and BEGIN sent only once the lease counts as acquired: no statement runs on a task that is
            // being given up on (see leased).
            try await Self.withOpenConnection(of: pool, under: lease) { connection in
                if watchesSilence { try await lease.watch(connection, in: pool, logger: logger) }
                return try await connection.withTransaction(logger: logger) { connection in
                    try await body(Session(
                        connection: connection, logger: logger, lease: lease, availability: self.availability,
                        webhookSubscriptions: self.webhookSubscriptions, clock: self.clock))
                }
            }
        }
    }

    /// Runs statements on a pooled connection outside a transaction (single statements).
    func session<T: Sendable>(_ action: String, _ body: @escaping @Sendable (Session) async throws -> T)
        async throws -> T
    {
        let watchesSilence = configuration.watchesSilentConnections
        return try await leased(action, limited: true) { pool, logger, lease in
            try await Self.withOpenConnection(of: pool, under: lease) { connection in
                if watchesSilence { try await lease.watch(connection, in: pool, logger: logger) }
                return try await body(Session(
                        connection: connection, logger: logger, lease: lease, availability: self.availability,
                        webhookSubscriptions: self.webhookSubscriptions, clock: self.clock))
            }
        }
    }

    /// A leased connection that was closed already.
    private struct ClosedWhenLeased: Error {}

    /// Runs `body` on an open connection of `pool`, under `lease` (its time limit runs meanwhile).
    ///
    /// postgres-nio may lease a connection that was closed a moment before (by an operation's time limit, the
    /// silent-connection watch, the pulse), or that Herald is closing, before it dropped it: nothing was sent on it, so
    /// another one is leased, within the wait for a connection.
    private static func withOpenConnection<T: Sendable>(
        of pool: DatabaseHosts.Pool, under lease: LeaseState,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        while true {
            do {
                return try await pool.client.withConnection { connection in
                    guard !connection.isClosed, !pool.closing.contains(connection) else { throw ClosedWhenLeased() }
                    try lease.acquire(connection, closedBy: pool.closing)
                    defer { lease.finished() }
                    return try await body(connection)
                }
            } catch is ClosedWhenLeased {
                // The pool drops the connection once its close is seen: a moment, not a busy loop.
                try await Task.sleep(for: .milliseconds(5))
                if lease.isGivenUp { throw CancellationError() }
            }
        }
    }

    /// A duration in seconds, to one decimal.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Asks the database whether it answers (``DatabasePulse``) whenever an operation waits and nothing got an answer
    /// for a moment, every `idle` when nothing happens at all, and every tick while it is away; finds it away when it
    /// does not answer, and back when it does.
    private func pulse(idle: Duration) async {
        var lastAsked = ContinuousClock.now
        while (try? await Task.sleep(for: DatabasePulse.tick)) != nil {
            // An operation whose limits were set before the database was found away, and which got its connection
            // after, would otherwise wait its full limit.
            if availability.isAway { deadlines.tighten(to: configuration.awayTimeout) }
            // While others are answered, an operation waiting long on its connection may sit on a path gone silent:
            // asked once per quiet, so that the pulse's own connection, dead with it, tells so.
            let now = ContinuousClock.now
            let operationWaits =
                now - lastAsked >= DatabasePulse.quiet
                && deadlines.oldestOperation.map { now - $0 >= DatabasePulse.quiet } ?? false
            guard
                operationWaits
                    || availability.needsPulse(
                        operationsWaiting: !operations.isEmpty, quiet: DatabasePulse.quiet, idle: idle)
            else { continue }
            lastAsked = now
            let pool = await databaseHosts.current()
            let mark = availability.mark()
            let asked = ContinuousClock.now
            let answer = await pool.pulse.ask()
            if answer != .answered {
                logger.debug(
                    "The pulse's SELECT 1: \(answer)",
                    metadata: ["herald.seconds": "\(Self.seconds(ContinuousClock.now - asked))"])
            }
            let reason: String
            switch answer {
            case .answered:
                pulseStatistics.update { $0.answered += 1 }
                if let awayFor = availability.answered(since: mark) { foundBack(after: awayFor) }
                continue
            case .pathSilent:
                connectionsWentSilent(before: asked, mark: mark)
                continue
            case .slow:
                // The backend received the question: the database is slow (a loaded machine), not away.
                pulseStatistics.update { $0.slow += 1 }
                continue
            case .refused:
                reason = "it refuses connections"
            case .unanswered:
                pulseStatistics.update { $0.unanswered += 1 }
                // Before the first answer a pool may still be opening its first connections, slowly on a loaded
                // machine; and a statement answered meanwhile says the database is slow, not away.
                guard availability.hasAnswered, !availability.heard(since: asked) else { continue }
                reason = "SELECT 1 on a connection of its own got no answer within 1 s"
            case .notConnected:
                pulseStatistics.update { $0.unanswered += 1 }
                // A loaded machine opening many connections is slow to open one more: away only after a longer silence.
                guard availability.hasAnswered, !availability.heard(since: .now - DatabasePulse.silenceWithoutConnection)
                else { continue }
                reason = "no connection within 1 s, and no answer to anything for \(DatabasePulse.silenceWithoutConnection)"
            }
            if availability.lost() {
                foundAway(reason)
                // The statements sent wait on a path that does not answer; a wait for a connection may only be slow.
                deadlines.tighten(to: configuration.awayTimeout, operationsTo: .zero)
            }
        }
    }

    /// The database was found away, for `reason`.
    private func foundAway(_ reason: String) {
        pulseStatistics.update { $0.foundAway += 1 }
        events.warning(
            "The database is away (\(reason)): requests that need it answer 503 within a second until it is back; sends wait for it"
        )
    }

    /// The connections opened before `instant` went silent, the database answers (``DatabasePulse/Answer/pathSilent``):
    /// the operations waiting on them fail at once (they would wait for the silent-connection watch, seconds), and the
    /// pool is renewed, since its idle connections are as dead.
    private func connectionsWentSilent(before instant: ContinuousClock.Instant, mark: DatabaseAvailability.Mark) {
        if let awayFor = availability.answered(since: mark) {
            foundBack(after: awayFor)
        } else if databaseHosts.renewCurrent(ifMadeBefore: instant) {
            pulseStatistics.update { $0.renewedPools += 1 }
        }
        pulseStatistics.update { $0.silentPaths += 1 }
        events.warning(
            "The connections to the database went silent (SELECT 1 on an open connection never reached the database, which answers a new one: a NAT or load balancer on the way lost them): the operations waiting on them fail, and Herald opens new ones"
        )
        // Last: what their callers see next is the state above.
        deadlines.expireOperations(acquiredBefore: instant)
    }

    /// The database answered again, after `awayFor` away. The pool is replaced by a new one on the same host: its
    /// connections may sit on a path gone silent, or on a server that restarted, and postgres-nio's pool waits longer
    /// after each failed connection attempt (7 s after a 30-second outage, up to a minute), where a new pool connects
    /// at once.
    private func foundBack(after awayFor: Duration) {
        let renewed = databaseHosts.renewCurrent(ifMadeBefore: .now - awayFor)
        pulseStatistics.update { statistics in
            statistics.foundBack += 1
            if renewed { statistics.renewedPools += 1 }
        }
        events.notice("The database answers again, after \(Self.seconds(awayFor)) s away: going on")
    }

    /// Runs an operation that leases a connection, failing it when no connection comes within the acquire timeout.
    ///
    /// postgres-nio queues a lease until a connection exists, retrying a server that is down for a minute before
    /// it gives up; a readiness probe and a registration must not wait that long.
    ///
    /// postgres-nio cannot be trusted with cancellation: a statement whose task is cancelled while it runs is never
    /// answered, and a lease request cancelled while the pool opens its first connection is sometimes never answered
    /// either. A cancelled caller (a test's time limit, a second SIGTERM) would wait forever. So the operation runs in a
    /// task of its own that is never cancelled:
    /// - while it waits for a connection, a timeout or the caller's cancellation gives it up: the caller gets its error
    ///   at once, and the operation, once the pool answers, returns its connection without running a statement;
    /// - once it has its connection, its statements run to their end (milliseconds) and the caller waits for them; only
    ///   code the caller passed in (``Session/whileCallerWaits(_:)``) sees the caller's cancellation.
    ///
    /// Once it has its connection, an operation has ``Configuration/operationTimeout`` (`limited`) to end; past it the
    /// connection is closed under it — a silent path never answers — and it fails with `.timedOut`. While the database
    /// is away (``DatabaseAvailability``) both waits are ``Configuration/awayTimeout`` at most.
    private func leased<T: Sendable>(
        _ action: String, limited: Bool,
        _ operation: @escaping @Sendable (DatabaseHosts.Pool, Logger, LeaseState) async throws -> T
    ) async throws -> T {
        try ensureOpen()
        operations.begin()
        defer { operations.end() }
        // Checked again once counted: run() may have stopped in between, and it stops the pool only when none is.
        try ensureOpen()
        let started = ContinuousClock.now
        let mark = availability.mark()
        let away = availability.isAway
        let awayTimeout = configuration.awayTimeout
        let timeout = away ? min(configuration.acquireTimeout, awayTimeout) : configuration.acquireTimeout
        let limit = limited ? (away ? min(configuration.operationTimeout, awayTimeout) : configuration.operationTimeout) : nil
        let (databaseHosts, logger) = (self.databaseHosts, self.logger)
        // The first of the operation's result, the timeouts and the cancellation.
        let answer = OneShot<Result<T, any Error>>()
        // Past its limit the operation's connection is closed, and its caller answered at once: postgres-nio may never
        // answer a statement whose connection closed under it.
        let lease = LeaseState(limit: limit, deadlines: deadlines) {
            _ = answer.fulfil(.failure(LeaseState.GivenUp.ranOutOfTime))
        }
        Task {
            do {
                // With several hosts, the first is chosen before any operation runs.
                let pool = await databaseHosts.current()
                pool.operations.begin()
                defer { pool.operations.end() }
                answer.fulfil(.success(try await operation(pool, logger, lease)))
            } catch {
                answer.fulfil(.failure(error))
            }
        }
        let deadline = deadlines.add(.now + timeout) { _ in
            if lease.abandon(.timedOut) { answer.fulfil(.failure(LeaseState.GivenUp.timedOut)) }
        }
        defer { deadlines.remove(deadline) }
        let result = await withTaskCancellationHandler {
            await answer.waitEvenIfCancelled()
        } onCancel: {
            if lease.abandon(.cancelled) { answer.fulfil(.failure(CancellationError())) }
            lease.callerCancelled()
        }
        do {
            let value = try result.get()
            if let awayFor = availability.answered(since: mark) { foundBack(after: awayFor) }
            return value
        } catch LeaseState.GivenUp.timedOut {
            throw StoreError(
                .unavailable,
                "PostgreSQL could not \(action): no connection within \(timeout). Check the database URL, that the server runs and accepts connections, or raise the pool size."
            )
        } catch {
            let mapped: any Error =
                lease.foundSilent
                ? StoreError(
                    .timedOut,
                    "PostgreSQL could not \(action): its connection went silent (the database had been waiting for Herald's next message while Herald waited for its answer: the network between them drops the connection's packets), so Herald closed it after \(Self.seconds(ContinuousClock.now - started)) s. Try again: a new connection works.",
                    underlying: error)
                : lease.ranOutOfTime || error as? LeaseState.GivenUp == .ranOutOfTime
                ? StoreError(
                    .timedOut,
                    "PostgreSQL could not \(action): no answer after \(Self.seconds(ContinuousClock.now - started)) s (the limit is \(limit ?? timeout), 1 s once the database is found away), so Herald closed the connection. The database or the network to it is stalled.",
                    underlying: error)
                : Self.map(error, action)
            if let storeError = mapped as? StoreError, storeError.code == .readOnly { databaseHosts.refusedWrite() }
            // One connection gone silent says nothing of the others: new connections work.
            if let storeError = mapped as? StoreError, [.unavailable, .timedOut, .commitUnknown].contains(storeError.code),
                !lease.foundSilent, availability.lost()
            {
                foundAway("an operation could not \(action): \(storeError.code)")
                deadlines.tighten(to: awayTimeout)
            }
            throw mapped
        }
    }

    func ensureOpen() throws {
        if closed.withLock({ $0 }) {
            throw StoreError(.closed, "The PostgreSQL store was closed: create a new one.")
        }
    }

    static func map(_ error: any Error, _ action: String) -> any Error {
        if error is StoreError || error is CancellationError { return error }
        if let error = error as? PostgresTransactionError {
            if error.closureError == nil, error.beginError == nil, let commit = error.commitError {
                return mapCommit(commit, action)
            }
            return map(
                error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error, action)
        }
        guard let psql = error as? PSQLError else {
            return StoreError(.backend, "PostgreSQL could not \(action).", underlying: error)
        }
        if psql.code == .server, let message = psql.serverInfo?[.message] {
            let sqlState = psql.serverInfo?[.sqlState]
            let state = sqlState.map { " (SQLSTATE \($0))" } ?? ""
            let (code, advice) = classify(sqlState: sqlState ?? "")
            return StoreError(code, "PostgreSQL could not \(action): \(message)\(state).\(advice)", underlying: error)
        }
        return StoreError(
            .unavailable,
            "PostgreSQL could not \(action): the server cannot be reached or closed the connection (\(psql.code)). Check the database URL, that the server runs, and that it accepts connections from this host.",
            underlying: error)
    }

    /// A COMMIT that failed: refused by the server (a deferred constraint, a serialization failure — nothing was
    /// stored), or lost with its connection, when the transaction may have committed or not.
    private static func mapCommit(_ error: any Error, _ action: String) -> any Error {
        if let psql = error as? PSQLError, psql.code == .server { return map(psql, action) }
        return StoreError(
            .commitUnknown,
            "PostgreSQL could not \(action): the connection was lost while the database committed, so it may or may not be stored. Try again; the database may be restarting or failing over.",
            underlying: error)
    }

    /// The kind of a server error by its SQLSTATE (PostgreSQL's Appendix A), and what to add to its message.
    static func classify(sqlState: String) -> (StoreError.Code, String) {
        switch sqlState {
        case "40001", "40P01":
            return (.conflict, " Another transaction conflicted with it: try again.")
        case "25006":
            return (.readOnly, " The database accepts no writes now (a standby, or a failover under way).")
        case "57014":
            return (.timedOut, " A statement ran out of time: the database or the network to it is slow or stalled.")
        case "53100":
            return (.diskFull, " The database's disk is full: free space.")
        case "57P01", "57P02", "57P03", "53300":
            return (.unavailable, " The database is shutting down, starting, or has no connection slot free.")
        case let state where state.hasPrefix("08"):
            return (.unavailable, " The connection to the database failed.")
        default:
            return (.backend, "")
        }
    }
}

/// Counts the operations in flight, so that the pool stops only once none uses it.
final class InFlightOperations: Sendable {
    private let count = WatchedState(0, readyWhen: { $0 == 0 })

    func begin() { count.update { $0 += 1 } }

    func end() { count.update { $0 -= 1 } }

    var isEmpty: Bool { count.value == 0 }

    /// Waits until no operation is in flight, at most `limit`; `false` when some still were.
    func drained(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.count.wait()
                return self.count.value == 0
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}

/// Whether an operation got its connection or was given up on first (timed out, or its caller cancelled); the first of
/// the two wins. Also passes the caller's cancellation on to the caller's own code run under the lease.
final class LeaseState: Sendable {
    enum GivenUp: Error { case timedOut, cancelled, ranOutOfTime }

    private enum Phase {
        case waiting
        case acquired
        case abandoned
    }

    private struct State {
        var phase = Phase.waiting
        var callerCancelled = false
        var callerCode: [Int: @Sendable () -> Void] = [:]
        var nextCallerCode = 0
        var connection: PostgresConnection?
        var closing: ClosingConnections?
        /// The operation's deadline while it runs its statements (not while the caller's own code runs), and when.
        var deadline: Int?
        var deadlineAt: ContinuousClock.Instant?
        var ranOutOfTime = false
        /// The connection's backend process, once known (``watch(_:in:logger:)``), how to look at it, and the look
        /// scheduled.
        var pid: Int32?
        var lookAt: (@Sendable (Int32) async -> Bool)?
        var look: Int?
        var foundSilent = false
    }

    private let state = Mutex(State())
    /// How long the operation may run once it has its connection; `nil`: no limit.
    private let limit: Duration?
    private let deadlines: AcquireDeadlines

    private let expired: @Sendable () -> Void

    /// - Parameter expired: Called once the operation ran past `limit`, or its connection was found silent (after its
    ///   connection was closed).
    init(
        limit: Duration?, deadlines: AcquireDeadlines, expired: @escaping @Sendable () -> Void
    ) {
        self.limit = limit
        self.deadlines = deadlines
        self.expired = expired
    }

    /// Watches the connection for silence while the operation's statements run (``SilentConnectionWatch``): learns its
    /// backend process (asked once per connection), which the pool's watcher looks at.
    func watch(_ connection: PostgresConnection, in pool: DatabaseHosts.Pool, logger: Logger) async throws {
        guard limit != nil else { return }
        let pid = try await pool.watch.backends.pid(of: connection, logger: logger)
        state.withLock { state in
            state.pid = pid
            state.lookAt = { [watch = pool.watch] pid in await watch.isSilent(pid, logger: logger) }
        }
        scheduleLook()
    }

    /// Whether the operation's connection was closed because its path went silent.
    var foundSilent: Bool { state.withLock { $0.foundSilent } }

    private func scheduleLook() {
        let deadlines = self.deadlines
        state.withLock { state in
            guard state.pid != nil, state.deadline != nil, state.look == nil else { return }
            state.look = deadlines.add(.now + SilentConnectionWatch.firstLook) { [weak self] _ in self?.lookNow() }
        }
    }

    private func lookNow() {
        let (pid, look) = state.withLock { state -> (Int32?, (@Sendable (Int32) async -> Bool)?) in
            state.look = nil
            return state.deadline == nil ? (nil, nil) : (state.pid, state.lookAt)
        }
        guard let pid, let look else { return }
        Task {
            let silent = await look(pid)
            let stillWaiting = state.withLock { state in
                guard silent, state.deadline != nil, state.connection != nil else { return false }
                state.foundSilent = true
                return true
            }
            if stillWaiting { expire(.passed) } else { scheduleLook() }
        }
    }

    /// Called by the operation once it has its connection; its time limit starts.
    /// - Throws: `CancellationError` when the wait was given up on: the operation must run no statement.
    /// - Parameter closing: Closes the connection when the operation runs out of time.
    func acquire(_ connection: PostgresConnection, closedBy closing: ClosingConnections) throws {
        try state.withLock { state in
            switch state.phase {
            case .waiting: state.phase = .acquired
            case .acquired: break
            case .abandoned: throw CancellationError()
            }
            state.connection = connection
            state.closing = closing
        }
        startClock()
    }

    /// Called by the operation when it is done with its connection: its time limit ends.
    func finished() {
        stopClock()
        state.withLock { $0.connection = nil }
    }

    /// Whether the operation ran past its time limit, and its connection was closed under it.
    var ranOutOfTime: Bool { state.withLock { $0.ranOutOfTime } }

    /// How long an operation with a time limit may still run once its caller was cancelled (a shutdown, a request
    /// given up): its answer is no longer wanted, and on a path gone silent its full limit would hold the stop.
    static let limitOnceCancelled: Duration = .seconds(1)

    private func startClock() {
        guard var limit else { return }
        if isCallerCancelled { limit = min(limit, Self.limitOnceCancelled) }
        let at = ContinuousClock.now + limit
        let id = deadlines.add(at, operation: true) { [weak self] expiry in self?.expire(expiry) }
        state.withLock { state in
            state.deadline = id
            state.deadlineAt = at
        }
        scheduleLook()
    }

    private func stopClock() {
        let (deadline, look) = state.withLock { state -> (Int?, Int?) in
            defer {
                state.deadline = nil
                state.deadlineAt = nil
                state.look = nil
            }
            return (state.deadline, state.look)
        }
        if let deadline { deadlines.remove(deadline) }
        if let look { deadlines.remove(look) }
    }

    /// The limit passed, or the connection was found silent: the connection is closed, which fails the statement
    /// waiting on it (a silent path never answers it), and the pool drops the connection.
    private func expire(_ expiry: AcquireDeadlines.Expiry) {
        let (connection, closing) = state.withLock { state -> (PostgresConnection?, ClosingConnections?) in
            state.deadline = nil
            state.deadlineAt = nil
            state.ranOutOfTime = true
            if expiry == .pathSilent { state.foundSilent = true }
            return (state.connection, state.closing)
        }
        if let connection, let closing { closing.close(connection) }
        expired()
    }

    /// Whether the wait for a connection was given up on (timed out, or its caller cancelled).
    var isGivenUp: Bool { state.withLock { $0.phase == .abandoned } }

    /// Gives up the wait for a connection; `false` when the operation has its connection already (it runs to its end).
    func abandon(_ reason: GivenUp) -> Bool {
        state.withLock { state in
            guard state.phase == .waiting else { return false }
            state.phase = .abandoned
            return true
        }
    }

    /// Whether the caller was cancelled: long work under one lease (the migrations) stops between its statements.
    var isCallerCancelled: Bool { state.withLock { $0.callerCancelled } }

    /// The caller was cancelled: cancels the caller's code running under the lease, now and from now on, and gives the
    /// statements running at most ``limitOnceCancelled`` more.
    func callerCancelled() {
        let deadlines = self.deadlines
        let cancels = state.withLock { state in
            state.callerCancelled = true
            // Only while the statements run (the clock is stopped while the caller's own code runs): moved in one
            // step, so that the operation's end cannot come between and leave a deadline behind.
            let latest = ContinuousClock.now + Self.limitOnceCancelled
            if let id = state.deadline, let at = state.deadlineAt, at > latest {
                deadlines.remove(id)
                state.deadline = deadlines.add(latest, operation: true) { [weak self] expiry in self?.expire(expiry) }
                state.deadlineAt = latest
            }
            return Array(state.callerCode.values)
        }
        for cancel in cancels { cancel() }
    }

    /// Runs `body` in a task the caller's cancellation reaches. The operation's time limit stops meanwhile (the work
    /// under an instance lock, a `LISTEN`), and starts again after.
    func cancellableByCaller<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        stopClock()
        defer { startClock() }
        let task = Task { try await body() }
        let (id, cancelled) = state.withLock { state in
            defer { state.nextCallerCode += 1 }
            state.callerCode[state.nextCallerCode] = { task.cancel() }
            return (state.nextCallerCode, state.callerCancelled)
        }
        if cancelled { task.cancel() }
        defer { _ = state.withLock { $0.callerCode.removeValue(forKey: id) } }
        return try await task.value
    }
}

/// The connections of a pool that Herald is closing under their operations (past their time limit, on a path gone
/// silent).
///
/// Until a close ends, the pool may hand the connection to the next operation, which must pass it over. Once it ends,
/// the pool is asked for a connection: postgres-nio's pool opens a new connection for a request when the request
/// comes, not when a leased connection closes, so requests queued while every connection was leased would wait for
/// ever for the ones Herald closed.
final class ClosingConnections: Sendable {
    private struct State {
        var closing: Set<ObjectIdentifier> = []
        /// The pool stops: no request is waiting that matters.
        var stopped = false
    }

    private let client: PostgresClient
    private let state = Mutex(State())

    init(client: PostgresClient) {
        self.client = client
    }

    /// Closes `connection`, counting it as closing until it is closed.
    func close(_ connection: PostgresConnection) {
        let id = ObjectIdentifier(connection)
        state.withLock { _ = $0.closing.insert(id) }
        connection.close().whenComplete { _ in
            let stopped = self.state.withLock { state in
                state.closing.remove(id)
                return state.stopped
            }
            guard !stopped else { return }
            // Served after the requests queued before it; fails once the pool stops.
            Task { [client = self.client] in try? await client.withConnection { _ in } }
        }
    }

    /// The pool stops (replaced by a new one, or the store stops): closes ask it for nothing more.
    func stop() {
        state.withLock { $0.stopped = true }
    }

    func contains(_ connection: PostgresConnection) -> Bool {
        state.withLock { $0.closing.contains(ObjectIdentifier(connection)) }
    }
}
