import ArgumentParser
import Foundation
@testable import HeraldCLI
import HeraldCore
import HeraldStore
import HeraldStoreSQLite
import HeraldTesting
import Testing

/// `herald keys create --app --environment --expires`, `list` and `revoke`, and their audit entries (issue 29).
@Suite("herald keys", .timeLimit(.minutes(2)))
struct KeysCommandTests: DatabaseCommandTesting {
    static let command = "keys"
    let temporary: TemporaryDirectory
    let configuration: String?
    var url: String { "sqlite://" + temporary.url.appendingPathComponent("keys.sqlite").path }

    init() throws {
        temporary = try TemporaryDirectory(prefix: "herald-keys")
        configuration = try configurationFile(servingApps: ["com.alpha.app", "com.beta.app"], in: temporary)
    }

    func keys() async throws -> [APIKey] {
        try await StoreConformance.withRunning(try SQLiteStore(url: url)) { store in try await store.apiKeys() }
    }

    @Test("create with apps, an environment and an expiry stores them; revoke revokes; both are in the audit log")
    func scopedKeyAndAudit() async throws {
        try await run(["create", "alpha-backend", "--app", "com.alpha.app", "--environment", "production", "--expires", "30d"])
        let store = try SQLiteStore(url: url)
        let key = try await StoreConformance.withRunning(store) { store in try #require(try await store.apiKeys().first) }
        #expect(key.name == "alpha-backend" && key.apps == ["com.alpha.app"] && key.environment == .production)
        let expiry = try #require(key.expiresAt)
        #expect(abs(expiry.timeIntervalSinceNow - 30 * 86_400) < 600)
        try await run(["revoke", key.id.uuidString])
        let entries = try await StoreConformance.withRunning(try SQLiteStore(url: url)) { store in
            try await store.auditEntries(AuditQuery(), after: nil, limit: 10).entries
        }
        #expect(entries.map(\.action) == [.keyRevoked, .keyCreated])
        #expect(entries.allSatisfy { $0.actor.kind == .cli && $0.actor.name.hasPrefix("herald CLI") && $0.address == nil })
        #expect(entries.last?.app == "com.alpha.app" && entries.first?.subject == key.id.uuidString.lowercased())
    }

    @Test("a key for an app the server does not serve is refused, as the API and the console refuse it: nothing is stored")
    func unservedApp() async throws {
        // Before, the command stored it: a key that acts on nothing, where the API answers 400 and the console's form
        // once made it a key for every app.
        await #expect(throws: ExitCode.self) { try await run(["create", "gamma", "--app", "com.gamma.app"]) }
        #expect(try await keys().isEmpty)
        try await run(["create", "beta", "--app", "com.beta.app"])
        #expect(try await keys().map(\.apps) == [["com.beta.app"]])
    }

    @Test("revoking a key that does not exist fails and says so; revoking twice changes nothing")
    func revokeUnknown() async throws {
        await #expect(throws: ExitCode.self) { try await run(["revoke", UUID().uuidString]) }
        try await run(["create", "ci"])
        let id = try #require(try await keys().first).id.uuidString
        try await run(["revoke", id])
        try await run(["revoke", id])
        let entries = try await StoreConformance.withRunning(try SQLiteStore(url: url)) { store in
            try await store.auditEntries(AuditQuery(), after: nil, limit: 10).entries
        }
        #expect(entries.map(\.action) == [.keyRevoked, .keyCreated])
    }

    @Test("a bad --environment or --expires is refused before anything is stored")
    func refusals() async throws {
        for arguments in [["--environment", "staging"], ["--expires", "soon"], ["--expires", "2001-01-01T00:00:00Z"], ["--app", "has space"]] {
            #expect(throws: (any Error).self, "\(arguments)") { try Herald.parseAsRoot(["keys", "create", "x"] + arguments) }
        }
    }
}

extension KeysCommandTests {
    @Test("the built binary: the first hrld_ text create prints is the whole secret (scripts take it), and list keeps its first five columns")
    func output() async throws {
        let binary = ProcessRunner.productsDirectory.appendingPathComponent("herald").path
        let config = try #require(configuration)
        let created = try await ProcessRunner.run(
            binary, ["keys", "create", "ct", "--scope", "send", "--app", "com.alpha.app", "--database-url", url, "--config", config])
        #expect(created.status == 0, "\(created.standardError)")
        let secret = try #require(created.standardOutput.firstMatch(of: /hrld_[A-Za-z0-9_-]+/)).output
        #expect(secret.count > 40, "the first match is the secret, not its display prefix: \(created.standardOutput)")
        let listed = try await ProcessRunner.run(binary, ["keys", "list", "--database-url", url])
        let columns = listed.standardOutput.split(separator: " ")
        #expect(columns.count >= 7 && columns[1] == "ct" && columns[3] == "send" && columns[4] == "active", "\(listed.standardOutput)")
        #expect(columns[5] == "com.alpha.app" && !listed.standardOutput.contains(String(secret)))
    }
}
