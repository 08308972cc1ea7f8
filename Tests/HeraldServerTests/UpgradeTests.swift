import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// A database an earlier Herald made (Tests/Fixtures/upgrade, made by make-fixture.sh with the build its README names)
/// is migrated by this one, and every record is still there and readable through the API.
@Suite("Server: upgrading a database an earlier Herald made", .timeLimit(.minutes(3)))
struct UpgradeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/upgrade")
    /// The API key make-fixture.sh configured (its secret is in the script): only its salted hash is in the fixture.
    static let bearer = "hrld_f1x70001_" + String(repeating: "u", count: 43)
    static let fixtureVersion = 15

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    /// A database holding the fixture of `backend`, dropped afterwards.
    static func withFixture(_ backend: Backend, _ body: (String) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let directory = try TemporaryDirectory(prefix: "herald-upgrade")
            let file = directory.url.appendingPathComponent("herald.sqlite")
            try FileManager.default.copyItem(
                at: fixtures.appendingPathComponent("herald-schema-\(fixtureVersion).sqlite"), to: file)
            try await body("sqlite://" + file.path)
        case .postgres:
            let base = try #require(testDatabaseURL)
            let schema = "herald_upgrade_" + UUID().uuidString.lowercased().prefix(8)
            let dump = try String(
                contentsOf: fixtures.appendingPathComponent("herald-schema-\(fixtureVersion).postgres.sql"),
                encoding: .utf8
            ).replacingOccurrences(of: "herald_fixture", with: schema)
            try Self.psql(base, input: dump)
            let url = base + (base.contains("?") ? "&" : "?") + "schema=\(schema)"
            do {
                try await body(url)
            } catch {
                try? Self.psql(base, input: "DROP SCHEMA \(schema) CASCADE;")
                throw error
            }
            try Self.psql(base, input: "DROP SCHEMA \(schema) CASCADE;")
        }
    }

    /// Runs SQL with psql (the dump defines functions, which one statement at a time through a driver cannot).
    static func psql(_ url: String, input: String) throws {
        // libpq takes the URL's sslmode and connect_timeout; the password goes through the environment.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        process.arguments = ["--dbname=\(url)", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"]
        let stdin = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "psql: \(errors)")
    }

    @Test("every table keeps its rows through the migrations, and every kind of record reads back", arguments: Backend.available)
    func upgrade(backend: Backend) async throws {
        try await Self.withFixture(backend) { url in
            // The rows before and after the migrations, table by table.
            let store = try StoreFactory.open(url: url)
            let versioned = try #require(store as? any VersionedMigrations)
            let (before, after) = try await StoreConformance.withRunning(store, migrate: false) { store in
                #expect(try await store.health().schemaVersion == Self.fixtureVersion)
                let before = try await versioned.rowCounts()
                try await store.migrate()
                #expect(try await store.health().schemaVersion == StoreSchema.latestVersion)
                return (before, try await versioned.rowCounts())
            }
            #expect(before["devices"] == 26 && before["sends"] == 5 && before["send_outcomes"] == 23, "\(before)")
            for (table, count) in before where table != "herald_migrations" {
                #expect(after[table] == count, "\(table): \(count) rows before, \(after[table] ?? -1) after")
            }

            // Read back through the API of this build, with the fixture's API key.
            let app = try await ServerHarness.build(databaseURL: url, logger: nil) { _ in }
            try await app.test(.router) { client in
                let client = ServerClient(client: client)
                let alice = try await client.call(.get, "/api/devices?user=alice", bearer: Self.bearer)
                #expect(alice.status == .ok, "the key still verifies: \(alice)")
                let devices = alice.json["devices"]?.arrayValue ?? []
                #expect(devices.count == 2)
                let first = try #require(devices.first { $0["token"]?.stringValue == Self.token(1) })
                #expect(first["tags"] == ["beta", "fr"] && first["preferredLanguages"] == ["fr-CA", "en"])
                #expect(first["timeZone"] == "America/Montreal" && first["appVersion"] == "2.1")
                let crowd = try await client.call(.get, "/api/devices?tag=crowd&limit=100", bearer: Self.bearer)
                #expect(crowd.json["devices"]?.arrayValue?.count == 20)
                let kinds = try await client.call(.get, "/api/devices?user=bob", bearer: Self.bearer)
                #expect(
                    Set(kinds.json["devices"]?.arrayValue?.compactMap { $0["tokenKind"]?.stringValue } ?? [])
                        == ["device", "liveactivity-start", "liveactivity"], "\(kinds)")

                let sends = try await client.call(.get, "/api/sends", bearer: Self.bearer).json["sends"]?.arrayValue ?? []
                #expect(sends.count == 5)
                func send(to target: String) throws -> JSONValue {
                    try #require(sends.first { $0["target"]?.stringValue == target }, "\(target) in \(sends)")
                }
                let inline = try send(to: "user alice")
                let inlineID = try #require(inline["id"]?.stringValue)
                let detail = try await client.call(.get, "/api/sends/\(inlineID)", bearer: Self.bearer).json
                #expect(detail["counts"]?["accepted"] == 2 && detail["outcomes"]?.arrayValue?.count == 2, "\(detail)")
                #expect(detail["receipts"]?["received"] == 1 && detail["receipts"]?["opened"] == 1)
                let background = try send(to: "tag crowd")
                #expect(background["status"] == "completed" && background["counts"]?["accepted"] == 20, "\(background)")
                #expect(background["lane"] == "background")
                let scheduled = try send(to: "tag beta")
                #expect(scheduled["status"] == "queued", "\(scheduled)")
                #expect(scheduled["sendAt"]?.stringValue.flatMap(RFC3339.date) == RFC3339.date("2027-11-20T09:00:00Z"))
                // Its stored job is the one this build runs as accepted.
                let scheduledID = try #require(SendID(scheduled["id"]?.stringValue ?? ""))
                let record = try #require(try await app.store.send(scheduledID))
                guard case .send(let job) = try StoredJob(jsonText: record.job ?? "", sendID: record.id) else {
                    Issue.record("the scheduled send's job is not a version-2 send: \(record.job ?? "none")")
                    return
                }
                #expect(job.bundleID == ServerHarness.topic && job.notifications[""] != nil)

                let activity = try await client.call(.get, "/api/activities/order-7", bearer: Self.bearer).json
                #expect(activity["status"] == "active" && activity["devices"] == 1, "\(activity)")
                let channels = try await client.call(.get, "/api/channels", bearer: Self.bearer).json
                #expect(channels["channels"]?.arrayValue?.count == 1, "\(channels)")
            }
        }
    }
}
