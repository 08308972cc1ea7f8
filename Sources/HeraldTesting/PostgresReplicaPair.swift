import Foundation

/// A PostgreSQL primary and a streaming standby of it, each a throwaway cluster on 127.0.0.1, for failover tests:
/// stop the primary, promote the standby, and see what a client given both hosts does.
///
/// Made with Debian's `postgresql` package (`/usr/lib/postgresql/<version>/bin`): `initdb`, `pg_basebackup -R`,
/// `pg_ctl`. As root, the servers run as the `postgres` user the package creates (PostgreSQL refuses root). Both
/// trust connections from loopback, so any password works; the database `herald_test` belongs to the role `herald`.
public final class PostgresReplicaPair: Sendable {
    public let primaryPort: Int
    public let standbyPort: Int
    private let directory: TemporaryDirectory
    private let bin: String
    private let asPostgres: [String]

    /// A URL naming both hosts, primary first, with `options` (for example `target_session_attrs=read-write`).
    public func url(options: String = "sslmode=disable") -> String {
        "postgres://herald:herald@127.0.0.1:\(primaryPort),127.0.0.1:\(standbyPort)/herald_test?\(options)"
    }

    /// The directory of PostgreSQL's programs, or `nil` when PostgreSQL is not installed.
    public static var binaries: String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let newest = versions.compactMap({ Int($0) }).max() else { return nil }
        let bin = "\(root)/\(newest)/bin"
        return FileManager.default.isExecutableFile(atPath: "\(bin)/initdb") ? bin : nil
    }

    /// Makes and starts both servers, the standby streaming from the primary.
    public static func start() async throws -> PostgresReplicaPair {
        guard let bin = binaries else {
            throw PostgresReplicaPairError("PostgreSQL is not installed: apt-get install postgresql")
        }
        let directory = try TemporaryDirectory(prefix: "herald-replicas")
        let asPostgres = getuid() == 0 ? ["runuser", "-u", "postgres", "--"] : []
        if getuid() == 0 {
            try FileManager.default.setAttributes(
                [.ownerAccountName: "postgres", .groupOwnerAccountName: "postgres"], ofItemAtPath: directory.path)
        }
        let pair = PostgresReplicaPair(
            directory: directory, bin: bin, asPostgres: asPostgres, primaryPort: try await freePort(),
            standbyPort: try await freePort())
        do {
            try await pair.make()
        } catch {
            pair.shutdown()
            throw error
        }
        return pair
    }

    private init(directory: TemporaryDirectory, bin: String, asPostgres: [String], primaryPort: Int, standbyPort: Int) {
        self.directory = directory
        self.bin = bin
        self.asPostgres = asPostgres
        self.primaryPort = primaryPort
        self.standbyPort = standbyPort
    }

    private var primary: String { directory.appending("primary").path }
    private var standby: String { directory.appending("standby").path }

    private func make() async throws {
        try await run(
            "initdb", "-D", primary, "-U", "postgres", "--auth-local=trust", "--auth-host=trust", "--no-sync")
        try await start(primary, port: primaryPort)
        try await run(
            "psql", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(primaryPort)", "-U", "postgres", "-d",
            "postgres", "-c", "CREATE ROLE herald LOGIN", "-c", "CREATE DATABASE herald_test OWNER herald")
        try await run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", "\(primaryPort)", "-U", "postgres", "-D", standby, "-R", "-X",
            "stream", "--no-sync", "--checkpoint=fast")
        try await start(standby, port: standbyPort)
    }

    private func start(_ data: String, port: Int) async throws {
        try await run(
            "pg_ctl", "-D", data, "-l", "\(data).log", "-w", "-t", "60", "-o",
            "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory.path) -c fsync=off -c max_connections=100",
            "start")
    }

    /// Stops the primary as a crash does (`pg_ctl stop -m immediate`): connections reset, nothing more committed.
    public func crashPrimary() async throws {
        try await run("pg_ctl", "-D", primary, "-m", "immediate", "-w", "stop")
    }

    /// Promotes the standby (`pg_ctl promote`), waiting until it accepts writes.
    public func promoteStandby() async throws {
        try await run("pg_ctl", "-D", standby, "-w", "-t", "60", "promote")
    }

    /// Runs `sql` on the standby (as the superuser) and returns psql's unaligned output.
    public func queryStandby(_ sql: String) async throws -> String {
        try await run(
            "psql", "-qAt", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(standbyPort)", "-U", "postgres", "-d",
            "herald_test", "-c", sql)
    }

    /// Stops both servers at once (the directory goes with the last reference).
    public func shutdown() {
        for data in [primary, standby] where FileManager.default.fileExists(atPath: "\(data)/postmaster.pid") {
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: asPostgres.isEmpty ? "\(bin)/pg_ctl" : asPostgres[0])
            stop.arguments = Array(asPostgres.dropFirst()) + (asPostgres.isEmpty ? [] : ["\(bin)/pg_ctl"])
                + ["-D", data, "-m", "immediate", "-w", "stop"]
            stop.standardOutput = FileHandle.nullDevice
            stop.standardError = FileHandle.nullDevice
            try? stop.run()
            stop.waitUntilExit()
        }
    }

    @discardableResult
    private func run(_ program: String, _ arguments: String...) async throws -> String {
        let command = asPostgres + ["\(bin)/\(program)"] + arguments
        let result = try await ProcessRunner.run(command[0], Array(command.dropFirst()))
        guard result.status == 0 else {
            throw PostgresReplicaPairError("\(program) failed (\(result.status)): \(result.standardError)")
        }
        return result.standardOutput
    }

    private static func freePort() async throws -> Int {
        let result = try await ProcessRunner.run(
            "python3",
            ["-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
        guard let port = Int(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw PostgresReplicaPairError("No free port: \(result.standardError)")
        }
        return port
    }
}

public struct PostgresReplicaPairError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
