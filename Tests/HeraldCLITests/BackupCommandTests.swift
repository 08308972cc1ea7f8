import ArgumentParser
import Foundation
@testable import HeraldCLI
import HeraldCore
import HeraldStore
import HeraldStoreSQLite
import HeraldTesting
import Testing

@Suite("herald backup", .timeLimit(.minutes(2)))
struct BackupCommandTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }

    init() throws { temporary = try TemporaryDirectory(prefix: "herald-backup") }

    static func registration(_ n: Int) -> TokenRegistration {
        TokenRegistration(token: StoreConformance.token(n), topic: "com.example.app", environment: .production)
    }

    static func backup(_ arguments: [String]) async throws {
        let command = try #require(try Herald.parseAsRoot(["backup"] + arguments) as? BackupCommand)
        try await command.run()
    }

    @Test("copies a database in use: a consistent snapshot with every registration committed before it, while writes go on")
    func liveCopy() async throws {
        let url = "sqlite://" + directory.appendingPathComponent("live.sqlite").path
        let destination = directory.appendingPathComponent("copy.sqlite").path
        let store = try SQLiteStore(url: url)
        try await StoreConformance.withRunning(store) { store in
            for n in 1...500 { _ = try await store.upsert(Self.registration(n)) }
            // A server goes on registering during the backup.
            let writer = Task {
                var n = 500
                while !Task.isCancelled {
                    n += 1
                    _ = try await store.upsert(Self.registration(n))
                }
                return n
            }
            try await Self.backup([destination, "--database-url", url])
            writer.cancel()
            let written = try await writer.value
            let copy = try SQLiteStore(url: "sqlite://" + destination)
            try await StoreConformance.withRunning(copy) { copy in
                let count = try await copy.count(matching: .topic("com.example.app"))
                #expect((500...written).contains(count), "a snapshot: \(count) of \(written)")
                // A snapshot holds a prefix of the registrations, in the order they were committed.
                for n in [1, 250, 500, count] { #expect(try await copy.device(StoreConformance.token(n)) != nil, "\(n)") }
                #expect(try await copy.device(StoreConformance.token(count + 1)) == nil)
                #expect(try await copy.health().schemaVersion == StoreSchema.latestVersion)
            }
        }
    }

    @Test("refuses an existing destination, a missing database and PostgreSQL, and writes nothing")
    func refusals() async throws {
        let url = "sqlite://" + directory.appendingPathComponent("db.sqlite").path
        let store = try SQLiteStore(url: url)
        try await StoreConformance.withRunning(store) { store in _ = try await store.upsert(Self.registration(1)) }
        let existing = directory.appendingPathComponent("existing.sqlite")
        try Data("keep me".utf8).write(to: existing)
        await #expect(throws: ValidationError.self) { try await Self.backup([existing.path, "--database-url", url]) }
        #expect(try String(contentsOf: existing, encoding: .utf8) == "keep me")
        let missing = "sqlite://" + directory.appendingPathComponent("missing.sqlite").path
        let target = directory.appendingPathComponent("target.sqlite").path
        await #expect(throws: ValidationError.self) { try await Self.backup([target, "--database-url", missing]) }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("missing.sqlite").path))
        await #expect(throws: ValidationError.self) {
            try await Self.backup([target, "--database-url", "postgres://herald@127.0.0.1:1/herald"])
        }
        let folder = directory.appendingPathComponent("no-such-folder/copy.sqlite").path
        await #expect(throws: ValidationError.self) { try await Self.backup([folder, "--database-url", url]) }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("partial") }
        #expect(!FileManager.default.fileExists(atPath: target) && left.isEmpty)
    }
}
