import GRDB
import HeraldStore
import Synchronization

/// Read-only connections that run one short statement on the calling thread: the read of a device by its token, of
/// a send by its id.
///
/// GRDB's pool reads hop to a reader's dispatch queue and back, and wrap every read in a transaction whose `BEGIN`,
/// `COMMIT` and schema check it parses each time. For a read by key that costs several times the read itself: in
/// `scripts/bench-server.sh transactional`, an inline send to one token spent about 150 µs of the server's CPU on its
/// one device read, and two context switches. One statement needs no transaction (SQLite runs it on one snapshot of
/// the committed state), and a read by key takes microseconds, so it runs where it is called.
///
/// Connections open on first use, up to ``limit`` at once; a read that finds them all busy returns `nil`, and the
/// store reads through GRDB's pool instead. Reads that may take long (counts, pages of a topic) keep using the pool:
/// they wait on its queues, not on a thread of Swift's concurrency pool.
final class QuickReaders: Sendable {
    private struct State: Sendable {
        var idle: [DatabaseQueue] = []
        var open = 0
        var closed = false
    }

    private let path: String
    private let configuration: GRDB.Configuration
    private let state = Mutex(State())
    /// The most connections open at once.
    let limit: Int

    /// - Parameter configuration: the store's connection settings; the connections are opened read-only.
    init(path: String, configuration: GRDB.Configuration, limit: Int) {
        var readOnly = configuration
        readOnly.readonly = true
        readOnly.label = (configuration.label ?? "herald") + ".quick"
        self.path = path
        self.configuration = readOnly
        self.limit = max(1, limit)
    }

    /// The connections open now, idle or reading.
    var openCount: Int { state.withLock { $0.open } }

    /// The rows of one statement, or `nil` when every connection is busy.
    func rows(_ statement: SQLStatement) throws -> [SQLiteRow]? {
        guard let connection = try take() else { return nil }
        defer { putBack(connection) }
        return try connection.inDatabase { db in try db.rows(statement) }
    }

    /// Closes the idle connections, and each busy one when its read ends. Reads after this return `nil`.
    func close() {
        let idle = state.withLock { state -> [DatabaseQueue] in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
            }
            return state.idle
        }
        for connection in idle { try? connection.close() }
    }

    private func take() throws -> DatabaseQueue? {
        enum Taken {
            case connection(DatabaseQueue)
            case open
            case none
        }
        let taken = state.withLock { state -> Taken in
            if state.closed { return .none }
            if let connection = state.idle.popLast() { return .connection(connection) }
            guard state.open < limit else { return .none }
            state.open += 1
            return .open
        }
        switch taken {
        case .connection(let connection): return connection
        case .none: return nil
        case .open:
            do {
                return try DatabaseQueue(path: path, configuration: configuration)
            } catch {
                state.withLock { $0.open -= 1 }
                throw error
            }
        }
    }

    private func putBack(_ connection: DatabaseQueue) {
        let keep = state.withLock { state -> Bool in
            guard !state.closed else {
                state.open -= 1
                return false
            }
            state.idle.append(connection)
            return true
        }
        if !keep { try? connection.close() }
    }
}
