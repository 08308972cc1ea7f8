import ArgumentParser
import HeraldServer

/// `herald vacuum`: lets an older SQLite database shrink as retention deletes (docs/storage.md, "Retention").
struct VacuumCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vacuum",
        abstract:
            "Rewrite a SQLite database made before Herald gave space back, so that retention shrinks its file. Stop the server first: it copies the whole file and needs as much free disk again."
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let changed = try await database.withStore { store in try await StoreFactory.vacuumForRetention(store) }
        switch changed {
        case true?: Output.line("Rewrote the database with incremental auto-vacuum: retention now shrinks the file.")
        case false?: Output.line("The database already gives space back: nothing to do.")
        case nil: Output.line("PostgreSQL reuses the space retention frees by itself: nothing to do.")
        }
    }
}
