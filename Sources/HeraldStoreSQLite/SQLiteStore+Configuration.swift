public import HeraldCore
import HeraldStore

extension SQLiteStore {
    /// Where the database lives and how commits reach the disk.
    public struct Configuration: Sendable {
        /// A database file, or memory.
        public struct Location: Sendable, Hashable, CustomStringConvertible {
            private enum Base: Sendable, Hashable {
                case file(String)
                case memory
            }

            private let base: Base

            private init(_ base: Base) { self.base = base }

            /// A database file; created with its folder's permissions when missing. Its `-wal` and `-shm`
            /// companions live beside it.
            public static func file(_ path: String) -> Location { Location(.file(path)) }
            /// A private database that lives as long as the store: for tests.
            public static let memory = Location(.memory)

            /// The file path, or `nil` in memory.
            public var path: String? {
                if case .file(let path) = base { return path }
                return nil
            }

            public var description: String { path ?? ":memory:" }
        }

        /// How hard SQLite works to make a commit durable (`PRAGMA synchronous`).
        public enum Synchronous: String, Sendable, Hashable {
            /// Every commit is on disk when it returns, even after a power cut: an fsync of the WAL per commit.
            case full = "FULL"
            /// Commits survive a crash of Herald, but the last ones may be lost in a power cut or a kernel crash;
            /// the database stays consistent. Faster: the WAL is synced only at checkpoints.
            case normal = "NORMAL"
        }

        /// The database.
        public var location: Location
        /// Durability of commits. Default ``Synchronous/full``.
        public var synchronous: Synchronous
        /// How long a statement waits for another process's write lock before failing. Default 5 seconds.
        public var busyTimeout: Duration
        /// The most connections reading at once beside the writer (WAL lets them read while it writes). Default 4.
        public var maximumReaderCount: Int
        /// Where record times come from.
        public var clock: any WallClock

        /// - Parameters:
        ///   - location: The database file, or memory.
        ///   - synchronous: Durability of commits; default `.full`.
        ///   - busyTimeout: How long to wait for another process's lock; default 5 s.
        ///   - maximumReaderCount: Concurrent readers; default 4.
        ///   - clock: Where record times come from; default the system clock.
        public init(
            location: Location, synchronous: Synchronous = .full, busyTimeout: Duration = .seconds(5),
            maximumReaderCount: Int = 4, clock: any WallClock = SystemWallClock()
        ) {
            self.location = location
            self.synchronous = synchronous
            self.busyTimeout = busyTimeout
            self.maximumReaderCount = maximumReaderCount
            self.clock = clock
        }

        /// Reads a database URL: `sqlite:///absolute/path/herald.sqlite`, `sqlite://relative/herald.sqlite` (or
        /// `sqlite:relative/herald.sqlite`), `sqlite::memory:`. Options keep their defaults.
        /// - Throws: ``HeraldStore/StoreError`` `.invalidURL` for another scheme or an empty path.
        public init(url: String, clock: any WallClock = SystemWallClock()) throws {
            guard url.hasPrefix("sqlite:") else {
                // Only the scheme is shown: another database's URL may carry a password.
                let scheme = url.firstIndex(of: ":").map { "a \(url[..<$0]): URL" } ?? "this"
                throw StoreError(
                    .invalidURL,
                    "The database URL is \(scheme), not a SQLite URL: write sqlite:///path/to/herald.sqlite or sqlite::memory:."
                )
            }
            var rest = url.dropFirst("sqlite:".count)
            if rest == ":memory:" {
                self.init(location: .memory, clock: clock)
                return
            }
            if rest.hasPrefix("//") { rest = rest.dropFirst(2) }
            if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
            guard !rest.isEmpty else {
                throw StoreError(.invalidURL, "The SQLite URL has no path: write sqlite:///path/to/herald.sqlite.")
            }
            self.init(location: .file(String(rest)), clock: clock)
        }
    }
}
