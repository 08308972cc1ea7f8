import Foundation
import GRDB
import HeraldStore

extension SQLiteStore {
    /// What a backup wrote.
    public struct Backup: Sendable, Hashable {
        /// The file written.
        public let path: String
        /// Its size in bytes.
        public let bytes: Int64
        /// The schema version it holds.
        public let schemaVersion: Int
    }

    /// Copies the database, while it is in use, into a new file: one consistent snapshot (`VACUUM INTO`, on a
    /// connection of its own), compacted, checked with `PRAGMA quick_check`, then moved to `destination`.
    ///
    /// Running servers go on reading and writing meanwhile: in WAL mode a reader blocks no writer. The copy holds
    /// every transaction committed before it started, and none after.
    /// - Throws: ``HeraldStore/StoreError`` `.invalidURL` for an in-memory database, or a `destination` that exists;
    ///   `.backend` when SQLite cannot write the copy or the copy fails its check (the partial file is removed).
    public func backup(to destination: String) async throws -> Backup {
        guard let source = configuration.location.path else {
            throw StoreError(.invalidURL, "An in-memory database has nothing to back up: back up a database file.")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError(
                .invalidURL, "\(destination) exists already: name a new file, so no earlier backup is overwritten.")
        }
        // Written beside the destination and renamed once checked, so a backup interrupted midway leaves no file that
        // looks complete.
        let partial = destination + ".partial-\(UUID().uuidString.prefix(8))"
        do {
            var options = GRDB.Configuration()
            options.readonly = true
            options.busyMode = .timeout(Self.seconds(configuration.busyTimeout))
            let reader = try DatabaseQueue(path: source, configuration: options)
            try await reader.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [partial])
            }
            try reader.close()
            let copy = try DatabaseQueue(path: partial)
            let (check, version) = try await copy.read { db in
                (
                    try String.fetchOne(db, sql: "PRAGMA quick_check") ?? "no answer",
                    try Int.fetchOne(db, sql: "SELECT MAX(version) FROM herald_migrations") ?? 0
                )
            }
            try copy.close()
            guard check == "ok" else {
                throw StoreError(.backend, "The copy failed SQLite's quick_check (\(check)): nothing was kept.")
            }
            try FileManager.default.moveItem(atPath: partial, toPath: destination)
            let size = (try FileManager.default.attributesOfItem(atPath: destination)[.size] as? NSNumber)?.int64Value
            return Backup(path: destination, bytes: size ?? 0, schemaVersion: version)
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            if let error = error as? StoreError { throw error }
            throw StoreError(
                .backend,
                "Cannot back up \(source) to \(destination): \(Self.reason(error)). Check that the folder exists, is writable and has room for a copy.",
                underlying: error)
        }
    }
}
