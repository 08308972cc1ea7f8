import ArgumentParser
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import ServiceLifecycle
import Testing

@testable import HeraldCLI

/// `herald serve`, `herald tokens`, `herald keys` and `herald vacuum`: parsing, and runs against a temporary database.
@Suite("Server: command line", .timeLimit(.minutes(3)))
struct CommandLineTests {
    @Test("serve, tokens and keys parse their flags; bad flags are refused")
    func parsing() throws {
        let serve = try #require(
            try Herald.parseAsRoot(["serve", "--listen", "127.0.0.1:0", "--database-url", "sqlite::memory:"])
                as? ServeCommand)
        #expect(serve.listen == "127.0.0.1:0" && serve.database.databaseURL == "sqlite::memory:")
        let add = try #require(
            try Herald.parseAsRoot(["tokens", "add", "abcd", "--debug", "--tag", "a", "--tag", "b"])
                as? TokensCommand.Add)
        #expect(add.debug && add.tags == ["a", "b"])
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(["tokens", "list"]) }
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(["keys", "create", "x", "--scope", "root"]) }
        #expect(throws: (any Error).self) { try Herald.parseAsRoot(["tokens", "list", "--user", "a", "--tag", "b"]) }
    }

    @Test("tokens add, list and remove, and keys create, list and revoke, work on the server's database")
    func tokensAndKeys() async throws {
        let database = try TestDatabase.make(.sqlite)
        let url = ["--database-url", database.url]
        let token = testToken(0x91)
        func run(_ arguments: [String]) async throws {
            var command = try Herald.parseAsRoot(arguments + url)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        }
        try await run(["tokens", "add", token.hex, "--environment", "production", "--user", "dana", "--language", "fr"])
        try await run(["tokens", "list", "--user", "dana"])
        try await run(["keys", "create", "ci", "--scope", "send", "--scope", "admin"])
        try await run(["keys", "list"])

        let store = try StoreFactory.open(url: database.url)
        let (device, keys) = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            let result = (try await store.device(token), try await store.apiKeys())
            await store.close()
            return result
        }
        #expect(device?.environment == .production && device?.userID == "dana" && device?.preferredLanguages == ["fr"])
        #expect(keys.count == 1 && keys[0].name == "ci" && keys[0].scopes == [.send, .admin])

        // An app the server does not serve is refused, as the API refuses it; before, the command stored the token.
        let stray = testToken(0x92)
        await #expect(throws: ExitCode.self) {
            try await run(["tokens", "add", stray.hex, "--debug", "--topic", "com.gamma.app"])
        }
        let (strayDevice, entries) = try await withThrowingTaskGroup(of: Void.self) { group in
            let store = try StoreFactory.open(url: database.url)
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            let result = (
                try await store.device(stray), try await store.auditEntries(AuditQuery(), after: nil, limit: 10).entries
            )
            await store.close()
            return result
        }
        #expect(strayDevice == nil)
        #expect(entries.map(\.action) == [.keyCreated, .deviceRegistered])
        #expect(entries.last?.app == "com.example.app" && entries.last?.subject == token.redacted)

        try await run(["keys", "revoke", keys[0].id.uuidString])
        try await run(["tokens", "remove", token.hex])
        await #expect(throws: ExitCode.self) { try await run(["tokens", "remove", token.hex]) }
        await #expect(throws: (any Error).self) { try await run(["tokens", "add", token.hex]) }
        await database.cleanup()
    }

    @Test("vacuum rewrites a SQLite database made before incremental auto-vacuum once, and then has nothing to do")
    func vacuum() async throws {
        let database = try TestDatabase.make(.sqlite)
        let path = String(database.url.dropFirst("sqlite://".count))
        // A database whose first table came before Herald asked for incremental auto-vacuum.
        let created = try await ProcessRunner.run(
            "python3", ["-c", "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('CREATE TABLE leftover (x)')", path])
        try #require(created.status == 0, "\(created)")
        let store = try StoreFactory.open(url: database.url)
        let (before, after, again) = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            try await store.migrate()
            let before = try await store.reclaimSpace(maximumBytes: 1 << 20)
            let after = try await StoreFactory.vacuumForRetention(store)
            let again = try await StoreFactory.vacuumForRetention(store)
            await store.close()
            return (before, after, again)
        }
        #expect(before == nil && after == true && again == false)
        let command = try #require(try Herald.parseAsRoot(["vacuum", "--database-url", database.url]) as? VacuumCommand)
        try await command.run()
        await database.cleanup()
    }
}
