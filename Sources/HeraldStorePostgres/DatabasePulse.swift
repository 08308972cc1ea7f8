import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Tells within a second whether the database answers at all: `SELECT 1` on a connection of its own, kept open, so
/// that neither a pool whose every connection waits on a dead path nor a slow statement of Herald's can hide the
/// answer (a stalled statement leaves `SELECT 1` answered; a partition, a stopped server or a path gone silent leave it
/// unanswered).
///
/// The store asks it whenever an operation waits and nothing got an answer for ``quiet``, every ``PostgresStore/Configuration/probeInterval`` when
/// nothing at all happens, and every ``tick`` while the database is away (to notice its return at once). A connection
/// that gets no answer within ``answerLimit`` is closed, and the next ask connects anew: a client of postgres-nio's
/// backs off between failed connection attempts (up to a minute after a long outage), and the pulse must find the
/// database's return within a tick.
///
/// A question unanswered for ``lookAfter`` is looked up from a new connection (``Answer``): received by its backend
/// means a slow database; never received, with the new connection answering, means the connections opened before went
/// silent; no look in time means nothing new — the database is away, or unreachable from here.
final class DatabasePulse: Sendable {
    /// How often the store considers asking.
    static let tick: Duration = .milliseconds(100)
    /// How long an operation waits, with nothing answered meanwhile, before the pulse asks.
    static let quiet: Duration = .milliseconds(300)
    /// How long the pulse waits for `SELECT 1`'s answer on its open connection: far longer than the database takes
    /// when it runs at all, even loaded; short enough that a request fails within 1.5 s of a partition.
    static let answerLimit: Duration = .seconds(1)
    /// How long it waits for a new connection (a server refusing connections fails at once: ``refuses(_:)``). Its
    /// connection is opened with the pool and kept, so this matters only once one was given up.
    static let connectLimit: Duration = .seconds(1)

    /// How long nothing must have been answered before a pulse that found no connection (and no refusal) finds the
    /// database away: a loaded machine opening many connections may take over ``connectLimit`` to open one, where a
    /// question on an open connection is answered.
    static let silenceWithoutConnection: Duration = .seconds(3)

    /// How long the question on the kept connection goes unanswered before the pulse looks at its backend from a new
    /// connection: a backend idle since before the question was sent never received it — the kept connection's path
    /// went silent, where the database and new connections work.
    static let lookAfter: Duration = .milliseconds(400)

    /// The host the pool connects to, when known (a URL's): a refused TCP connection says at once that the server
    /// is down, where postgres-nio's pool keeps trying.
    let endpoint: PostgresStore.Configuration.Host?
    private let configuration: PostgresClient.Configuration
    private let spare: SpareClient
    /// The backend process of the kept connection.
    private let backends = SilentConnectionWatch.Backends()
    private let logger: Logger

    init(configuration: PostgresClient.Configuration, endpoint: PostgresStore.Configuration.Host?, logger: Logger) {
        self.spare = SpareClient(
            configuration: configuration, connectTimeout: Self.connectLimit, keepsConnection: true, logger: logger)
        self.configuration = configuration
        self.endpoint = endpoint
        self.logger = logger
    }

    /// What an ask found.
    enum Answer: Sendable {
        /// `SELECT 1` was answered.
        case answered
        /// No answer within ``answerLimit`` on the kept connection, and no sign from a new one that the backend received
        /// the question.
        case unanswered
        /// No connection within ``connectLimit`` (and not refused): a partition, or a loaded machine opening many.
        case notConnected
        /// No answer within ``answerLimit``, but the backend received the question (seen from a new connection): the
        /// database is slow, not away.
        case slow
        /// Nothing listens on the server's port: it is stopped, or restarting.
        case refused
        /// The kept connection's question never reached its backend, and a new connection answers: the connections
        /// opened before went silent (a NAT or a load balancer on the way lost them), the database works.
        case pathSilent
    }

    /// The question out on the kept connection: to whom, and when.
    private struct Question: Sendable {
        let pid: Int32
        let sent: ContinuousClock.Instant
    }

    /// Asks `SELECT 1` on the kept connection: answered within ``answerLimit`` (a connection within
    /// ``connectLimit``), or not; when it has no answer within ``lookAfter``, looks from a new connection whether
    /// the question reached the backend.
    func ask() async -> Answer {
        let client = spare.client
        let (logger, configuration, backends) = (self.logger, self.configuration, self.backends)
        let question = Mutex<Question?>(nil)
        // Set once the kept connection is leased: a question out, even when it was the one for its backend process.
        let leased = Mutex(false)
        let seen = Mutex<Reception?>(nil)
        let refused = Task { [endpoint] in
            // Only while the connection is still missing after a moment: an open one answers first.
            try await Task.sleep(for: .milliseconds(100))
            guard let endpoint else { return false }
            return await Self.refuses(endpoint)
        }
        let look = Task {
            try await Task.sleep(for: Self.lookAfter)
            // Still connecting, or its backend unknown (the connection was new): nothing to look at.
            guard let asked = question.withLock({ $0 }) else { return false }
            let reception = await Self.reception(of: asked, configuration: configuration, logger: logger)
            seen.withLock { $0 = reception }
            return reception == .neverReceived
        }
        defer {
            refused.cancel()
            look.cancel()
        }
        let answered =
            await SilentConnectionWatch.answer(
                from: client, connectingWithin: Self.connectLimit, answeringWithin: Self.answerLimit,
                unlessGivenUp: {
                    await withTaskGroup(of: Bool.self) { group in
                        group.addTask { (try? await refused.value) ?? false }
                        group.addTask { (try? await look.value) ?? false }
                        for await givenUp in group where givenUp { return true }
                        return false
                    }
                }
            ) { connection in
                leased.withLock { $0 = true }
                let pid = try await backends.pid(of: connection, logger: logger)
                question.withLock { $0 = Question(pid: pid, sent: .now) }
                _ = try await connection.query("SELECT 1", logger: logger).collect()
                return true
            } ?? false
        if answered { return .answered }
        spare.replace()
        switch seen.withLock({ $0 }) {
        case .neverReceived: return .pathSilent
        case .received: return .slow
        case nil: break
        }
        if (try? await refused.value) == true { return .refused }
        return leased.withLock { $0 } ? .unanswered : .notConnected
    }

    /// Whether a question reached its backend.
    private enum Reception: Sendable {
        case received
        case neverReceived
    }

    /// Whether `question` reached its backend, as seen from a new connection (within ``connectLimit`` and
    /// ``answerLimit``; `nil` past them): never, when the backend is gone or idle since before the question was sent;
    /// a backend that received it is running it, or idle since it answered (the database is slow, or the answer is on
    /// its way).
    private static func reception(
        of question: Question, configuration: PostgresClient.Configuration, logger: Logger
    ) async -> Reception? {
        let once = SpareClient(
            configuration: configuration, connectTimeout: connectLimit, keepsConnection: false, logger: logger)
        defer { once.replace() }
        return await SilentConnectionWatch.answer(
            from: once.client, connectingWithin: connectLimit, answeringWithin: answerLimit
        ) { connection in
            let rows = try await connection.query(SilentConnectionWatch.lookStatement(pid: question.pid), logger: logger)
                .collect()
            // Measured once the look is answered: the longest the question can have been out.
            let out = ContinuousClock.now - question.sent
            guard let row = rows.first else { return .neverReceived }
            let (state, idleSeconds) = try row.decode((String?, Double?).self, context: .default)
            guard let state, state.hasPrefix("idle"), let idleSeconds else { return .received }
            return .seconds(idleSeconds) > out ? .neverReceived : .received
        }
    }

    /// Opens the pulse's connection and learns its backend process, so that neither the first ask waits for them, nor
    /// a path gone silent before the first ask leaves its backend unknown (a busy store may not ask for hours).
    func start() {
        let (client, backends, logger) = (spare.client, self.backends, self.logger)
        Task {
            _ = await SilentConnectionWatch.answer(
                from: client, connectingWithin: Self.connectLimit * 10, answeringWithin: Self.answerLimit * 10
            ) { connection in try await backends.pid(of: connection, logger: logger) }
        }
    }

    /// Stops the pulse's connection.
    func stop() { spare.replace() }

    /// Whether a TCP connection to `host` is refused (nothing listens: the server is stopped or restarting), within
    /// half a second; `false` when it connects, times out, or the name does not resolve.
    static func refuses(_ host: PostgresStore.Configuration.Host) async -> Bool {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(500))
        do {
            let channel = try await bootstrap.connect(host: host.name, port: host.port).get()
            try? await channel.close()
            return false
        } catch let error as NIOConnectionError {
            return !error.connectionErrors.isEmpty
                && error.connectionErrors.allSatisfy { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
        } catch let error as IOError {
            return error.errnoCode == ECONNREFUSED
        } catch {
            return false
        }
    }
}
