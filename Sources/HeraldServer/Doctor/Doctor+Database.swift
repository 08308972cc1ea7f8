import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import ServiceLifecycle

extension Doctor {
    /// Opens the configured database without creating or migrating anything, checks it, and closes it.
    func databaseChecks() async -> [DeploymentCheck] {
        let url = configuration.databaseURL
        let redacted = redactedDatabaseURL(url)
        if url.hasPrefix("sqlite:") {
            let location: SQLiteStore.Configuration.Location
            do {
                location = try SQLiteStore.Configuration(url: url).location
            } catch {
                return [DeploymentCheck("database", .failure, "\(redacted): \(Self.message(error))"), noClock]
            }
            guard let path = location.path.map({ URL(fileURLWithPath: $0).standardizedFileURL.path }) else {
                return [
                    DeploymentCheck(
                        "database", .warning,
                        "\(redacted) is in memory: everything is lost when the server stops. Use a file (sqlite:///var/lib/herald/herald.sqlite) or PostgreSQL."
                    ), noClock,
                ]
            }
            if !FileManager.default.fileExists(atPath: path) {
                let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
                guard FileManager.default.isWritableFile(atPath: folder) else {
                    return [
                        DeploymentCheck(
                            "database", .failure,
                            "\(path) does not exist and its folder \(folder) is not writable (or does not exist), so herald serve cannot create it: create the folder and give the server's user write access."
                        ), noClock,
                    ]
                }
                return [
                    DeploymentCheck(
                        "database", .warning,
                        "\(path) does not exist yet: herald serve creates and migrates it at start (its folder is writable)."),
                    noClock,
                ]
            }
        }
        let store: any Store
        do {
            store = try StoreFactory.open(url: url)
        } catch {
            return [DeploymentCheck("database", .failure, "\(redacted): \(Self.message(error))"), noClock]
        }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await store.run() }
            let checks = await databaseChecks(store: store)
            await store.close()
            group.cancelAll()
            return checks
        }
    }

    /// The database answers, its schema version against this binary's, and the clock against PostgreSQL's.
    func databaseChecks(store: any Store) async -> [DeploymentCheck] {
        let redacted = redactedDatabaseURL(configuration.databaseURL)
        let health: StoreHealth
        do {
            health = try await store.health()
        } catch {
            return [
                DeploymentCheck(
                    "database", .failure,
                    "\(redacted) does not answer: \(Self.message(error)) Check HERALD_DATABASE_URL, that the database server runs and that it accepts this user."
                ),
                DeploymentCheck("clock", .skipped, "Not checked: the database does not answer."),
            ]
        }
        var checks = [Self.schemaCheck(health, database: redacted), await clockCheck(store)]
        if health.isMigrated, let keys = await unscopedKeysCheck(store) { checks.append(keys) }
        if let disk = diskCheck() { checks.append(disk) }
        return checks
    }

    /// The free space under a SQLite file: a full disk refuses every registration and pauses every send
    /// (docs/reliability.md), so the operator hears of it before. `nil` for PostgreSQL and in-memory databases.
    func diskCheck() -> DeploymentCheck? {
        let url = configuration.databaseURL
        guard url.hasPrefix("sqlite:"), let path = try? SQLiteStore.Configuration(url: url).location.path else {
            return nil
        }
        let folder = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent().path
        var stats = statvfs()
        guard statvfs(folder, &stats) == 0 else { return nil }
        let free = Int64(stats.f_bavail) * Int64(stats.f_frsize)
        let total = Int64(stats.f_blocks) * Int64(stats.f_frsize)
        return Self.diskVerdict(free: free, total: total, folder: folder)
    }

    /// Below 100 MB free a failure, below 1 GB or a tenth of the file system a warning.
    static func diskVerdict(free: Int64, total: Int64, folder: String) -> DeploymentCheck {
        let megabytes = free / 1_000_000
        let stated = "\(folder) has \(megabytes) MB free"
        let advice =
            "when it fills up, registrations are refused (503) and sends pause until there is space again: free space or move the database"
        if free < 100_000_000 { return DeploymentCheck("disk", .failure, "\(stated): \(advice).") }
        if free < 1_000_000_000 || (total > 0 && free < total / 10) {
            return DeploymentCheck("disk", .warning, "\(stated) (\(total > 0 ? free * 100 / total : 0) %): \(advice).")
        }
        return DeploymentCheck("disk", .ok, "\(stated).")
    }

    /// With several apps, the active keys that may act on every app: a key made for one app's backend should not
    /// send to the others (docs/security.md). `nil` when there is nothing to say (one app, or every key scoped).
    func unscopedKeysCheck(_ store: any Store) async -> DeploymentCheck? {
        guard configuration.apps.count > 1 else { return nil }
        let now = options.now()
        guard let keys = try? await store.apiKeys() else { return nil }
        let unscoped = keys.filter { $0.isUsable(at: now) && !$0.isScoped && !$0.allows(.admin) }
        guard !unscoped.isEmpty else { return nil }
        return DeploymentCheck(
            "api keys", .warning,
            "\(unscoped.count) active key\(unscoped.count == 1 ? "" : "s") without apps (\(unscoped.map(\.name).sorted().joined(separator: ", "))) may send to every one of the \(configuration.apps.count) apps: make one key per app (herald keys create NAME --app BUNDLE_ID) and revoke these."
        )
    }

    static func schemaCheck(_ health: StoreHealth, database: String) -> DeploymentCheck {
        let version = health.schemaVersion
        let latest = health.latestSchemaVersion
        if version > latest {
            return DeploymentCheck(
                "database", .failure,
                "\(database) answers, but a newer Herald migrated it to schema \(version) and this binary knows up to \(latest): herald serve refuses it. Run the newer Herald, or restore a backup made before that upgrade."
            )
        }
        if version == 0 {
            return DeploymentCheck(
                "database", .warning, "\(database) answers and is empty: herald serve creates Herald's tables at start.")
        }
        if version < latest {
            return DeploymentCheck(
                "database", .warning,
                "\(database) answers at schema \(version); this binary's is \(latest): herald serve migrates it at start (back it up first)."
            )
        }
        return DeploymentCheck("database", .ok, "\(database) answers, migrated to schema \(version), this binary's.")
    }

    /// This machine's clock against PostgreSQL's: the only other clock Herald can read without the internet.
    func clockCheck(_ store: any Store) async -> DeploymentCheck {
        guard let postgres = store as? PostgresStore else { return noClock }
        let before = options.now()
        let databaseTime: Date
        do {
            databaseTime = try await postgres.serverClock()
        } catch {
            return DeploymentCheck("clock", .skipped, "Not checked: the database's clock cannot be read (\(Self.message(error))).")
        }
        let after = options.now()
        let roundTrip = after.timeIntervalSince(before)
        // The database read its clock somewhere between the two readings of ours: compare with their middle.
        let skew = before.addingTimeInterval(roundTrip / 2).timeIntervalSince(databaseTime)
        return Self.clockVerdict(skew: skew, uncertainty: roundTrip / 2)
    }

    /// `skew`: how far this machine's clock is ahead of the database's (negative: behind), in seconds.
    static func clockVerdict(skew: TimeInterval, uncertainty: TimeInterval) -> DeploymentCheck {
        let size = abs(skew)
        let amount = size < 1 ? "\(Int((size * 1000).rounded())) ms" : String(format: "%.1f s", size)
        let measured = "This machine's clock is \(amount) \(skew < 0 ? "behind" : "ahead of") PostgreSQL's (±\(Int((uncertainty * 1000).rounded(.up))) ms)"
        let advice =
            "APNs refuses provider tokens issued in the future (InvalidProviderToken) or more than an hour before its own time (ExpiredProviderToken), and Herald reuses a token for up to 50 minutes. Check which clock is wrong (timedatectl on each machine: System clock synchronized: yes) and keep both on NTP."
        if size > 60 { return DeploymentCheck("clock", .failure, "\(measured): \(advice)") }
        if size > 5 { return DeploymentCheck("clock", .warning, "\(measured): \(advice)") }
        return DeploymentCheck("clock", .ok, "\(measured).")
    }

    var noClock: DeploymentCheck {
        DeploymentCheck(
            "clock", .skipped,
            "Not checked: offline, only a PostgreSQL database has a clock to compare with. APNs refuses provider tokens issued in the future or more than an hour ago: keep this machine on NTP (timedatectl: System clock synchronized: yes)."
        )
    }

    /// A store error's message (never the URL's password), or the error's description.
    static func message(_ error: any Error) -> String {
        (error as? StoreError)?.message ?? "\(error)"
    }
}
