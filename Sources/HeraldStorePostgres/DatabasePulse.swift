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

    /// The host the pool connects to, when known (a URL's): a refused TCP connection says at once that the server
    /// is down, where postgres-nio's pool keeps trying.
    let endpoint: PostgresStore.Configuration.Host?
    private let spare: SpareClient
    private let logger: Logger

    init(configuration: PostgresClient.Configuration, endpoint: PostgresStore.Configuration.Host?, logger: Logger) {
        self.spare = SpareClient(
            configuration: configuration, connectTimeout: Self.connectLimit, keepsConnection: true, logger: logger)
        self.endpoint = endpoint
        self.logger = logger
    }

    /// What an ask found.
    enum Answer: Sendable {
        /// `SELECT 1` was answered.
        case answered
        /// No answer within ``answerLimit``, or no connection within ``connectLimit``.
        case unanswered
        /// Nothing listens on the server's port: it is stopped, or restarting.
        case refused
    }

    /// Asks `SELECT 1`: answered within ``answerLimit`` (a connection within ``connectLimit``), or not.
    func ask() async -> Answer {
        let client = spare.client
        let logger = self.logger
        let refused = Task { [endpoint] in
            // Only while the connection is still missing after a moment: an open one answers first.
            try await Task.sleep(for: .milliseconds(100))
            guard let endpoint else { return false }
            return await Self.refuses(endpoint)
        }
        defer { refused.cancel() }
        let answered =
            await SilentConnectionWatch.answer(
                from: client, connectingWithin: Self.connectLimit, answeringWithin: Self.answerLimit,
                unlessGivenUp: { (try? await refused.value) ?? false }
            ) { connection in
                _ = try await connection.query("SELECT 1", logger: logger).collect()
                return true
            } ?? false
        if answered { return .answered }
        spare.replace()
        return (try? await refused.value) == true ? .refused : .unanswered
    }

    /// Opens the pulse's connection, so that the first ask does not wait for one.
    func start() { _ = spare.client }

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
