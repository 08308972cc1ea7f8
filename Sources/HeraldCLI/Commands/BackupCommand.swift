import ArgumentParser
import Foundation
import HeraldServer
import HeraldStore
import HeraldStoreSQLite

/// `herald backup <file>`: a consistent copy of a live SQLite database.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the SQLite database, while servers use it, into a new file.",
        discussion: """
            The copy is one consistent snapshot (SQLite's VACUUM INTO on a connection of its own), compacted and \
            checked before it is given its name; running servers go on reading and writing meanwhile. Restore by \
            stopping the servers and putting the copy in the database's place. For PostgreSQL use pg_dump \
            (docs/operations.md, "Backups").
            """)

    @Argument(help: "The file to write; it must not exist.") var destination: String
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let url = database.resolvedURL
        guard url.hasPrefix("sqlite:") else {
            throw ValidationError(
                "herald backup copies SQLite databases; this one is PostgreSQL: back it up with pg_dump (docs/operations.md, \"Backups\")."
            )
        }
        let store: SQLiteStore
        let source: String
        do {
            let configuration = try SQLiteStore.Configuration(url: url)
            // Opening a missing file would create an empty database, and back that up.
            guard let path = configuration.location.path, FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("There is no database at \(url): check --database-url or HERALD_DATABASE_URL.")
            }
            source = path
            store = try SQLiteStore(configuration: configuration)
        } catch let error as StoreError {
            throw ValidationError(error.message)
        }
        let started = ContinuousClock.now
        do {
            let backup = try await store.backup(to: destination)
            let elapsed = started.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            Output.line(
                "Backed up \(source) to \(backup.path): \(String(format: "%.1f", Double(backup.bytes) / 1_048_576)) MB, schema version \(backup.schemaVersion), in \(String(format: "%.1f", seconds)) s."
            )
        } catch let error as StoreError {
            await store.close()
            throw ValidationError(error.message)
        }
        await store.close()
    }
}
