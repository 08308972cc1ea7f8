import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// SQLite on a disk that fills up: a small tmpfs of its own (mounting one needs root, which CI has), filled by a file
/// beside the database and freed again.
@Suite(
    "Server: SQLite on a full disk", .enabled(if: getuid() == 0, "mounting a tmpfs needs root"),
    .timeLimit(.minutes(2)))
struct FullDiskTests {
    @Test("a full disk refuses registrations with 503 and stores nothing; freed, they are stored again and the database is whole")
    func registrations() async throws {
        try await SmallDisk.with(megabytes: 8) { disk in
            try await ServerHarness.withServer(configure: { $0.databaseURL = "sqlite://" + disk.database.path }) {
                client, app in
                for n in 1...20 { try await client.register(testToken(n), debug: false) }
                try disk.fill()
                var refused = 0
                for n in 21...40 {
                    let answer = try await client.call(
                        .post, "/api/token", body: #"{"token": "\#(testToken(n).hex)", "debug": false}"#)
                    if answer.status == .serviceUnavailable {
                        refused += 1
                        #expect(answer.json["reason"]?.stringValue == "unavailable", "\(answer)")
                        #expect(answer.headers[.retryAfter] == "1")
                        #expect(answer.json["error"]?.stringValue?.contains("disk is full") == true, "\(answer)")
                        #expect(try await app.store.device(testToken(n)) == nil, "a refused registration stores nothing")
                    } else {
                        // SQLite may still find room in pages it had; what it answers 201 it stored.
                        #expect(answer.status == .created, "\(answer)")
                        #expect(try await app.store.device(testToken(n)) != nil)
                    }
                }
                #expect(refused > 0, "the disk is full: some registrations are refused")
                try disk.free()
                for n in 41...60 { try await client.register(testToken(n), debug: false) }
                #expect(try await app.store.count(matching: .topic(ServerHarness.topic)) == 60 - refused)
            }
            let check = try await ProcessRunner.run(
                "python3",
                [
                    "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
                    disk.database.path,
                ])
            #expect(check.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(check)")
        }
    }

    @Test("a background send on a disk that fills up pauses, and completes once there is space: every device once")
    func send() async throws {
        try await SmallDisk.with(megabytes: 16) { disk in
            try await TrustingEmulator.with(inbox: .countingOnly, faults: FaultConfiguration()) { key, emulator, host in
                try await ServerHarness.withServer(configure: {
                    $0.databaseURL = "sqlite://" + disk.database.path
                    $0.apns = .custom(host)
                    $0.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                    $0.sending.pageSize = 100
                    $0.sending.maximumInFlight = 50
                }) { client, app in
                    try await TopicSends.register(3_000, in: app.store)
                    let secret = try await SendTests.key(app)
                    // The registrations grew the write-ahead log, and SQLite reuses its space: without this, the
                    // send's records would fit in it and never meet the full disk.
                    try await disk.truncateLog()
                    let id = try await TopicSends.start(client, key: secret, alert: "full")
                    // Once a worker runs it: a claim that meets the full disk waits for space, which this test gives
                    // only once the send has sent (a loaded machine claimed it after the fill, and both waited).
                    await emulator.waitForCounters { $0.accepted >= 1 }
                    try disk.fill()
                    // As many as the send may have in flight: the most it sends while it cannot record.
                    await emulator.waitForCounters { $0.accepted >= 50 }
                    // The fault's length, not a wait for something to happen.
                    try await Task.sleep(for: .milliseconds(500))
                    try disk.free()
                    try await TopicSends.expectEveryDeviceOnce(id, count: 3_000, app: app, emulator: emulator)
                    let metrics = try await client.call(.get, "/metrics").body
                    #expect(!metrics.contains("herald_database_waits_total 0"), "the send waited for the disk")
                }
            }
        }
    }
}

/// A tmpfs of a few megabytes mounted on a temporary folder for the duration of `body`, with the database's path in
/// it and a filler file that takes every free byte.
struct SmallDisk: Sendable {
    let folder: URL
    var database: URL { folder.appendingPathComponent("herald.sqlite") }
    private var filler: URL { folder.appendingPathComponent("filler") }

    static func with(megabytes: Int, _ body: (SmallDisk) async throws -> Void) async throws {
        let directory = try TemporaryDirectory(prefix: "herald-small-disk")
        let disk = SmallDisk(folder: directory.url)
        let mount = try await ProcessRunner.run(
            "mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", directory.url.path])
        try #require(mount.status == 0, "mount: \(mount.standardError)")
        try await withCleanup({ _ = try? await ProcessRunner.run("umount", ["-l", directory.url.path]) }) {
            try await body(disk)
        }
    }

    /// Writes the filler until the disk has no byte left.
    func fill() throws {
        _ = FileManager.default.createFile(atPath: filler.path, contents: nil)
        let handle = try FileHandle(forWritingTo: filler)
        defer { try? handle.close() }
        let chunk = Data(repeating: 0x5a, count: 4_096)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        // The last partial block.
        while (try? handle.write(contentsOf: Data([0]))) != nil {}
    }

    /// Empties the database's write-ahead log (a checkpoint that truncates it), so that the next writes need new space.
    func truncateLog() async throws {
        let checkpoint = try await ProcessRunner.run(
            "python3",
            [
                "-c",
                "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone())",
                database.path,
            ])
        try #require(checkpoint.status == 0 && checkpoint.standardOutput.hasPrefix("(0,"), "\(checkpoint)")
    }

    /// Deletes the filler.
    func free() throws {
        try FileManager.default.removeItem(at: filler)
    }
}
