import ArgumentParser
import Foundation
@testable import HeraldCLI
import HeraldCore
import HeraldStore
import HeraldStoreSQLite
import HeraldTesting
import Testing

@Suite("herald webhooks")
struct WebhooksCommandTests: DatabaseCommandTesting {
    static let command = "webhooks"
    let temporary: TemporaryDirectory
    var url: String { "sqlite://" + temporary.url.appendingPathComponent("herald.sqlite").path }

    init() throws { temporary = try TemporaryDirectory(prefix: "herald-webhooks") }

    func endpoints() async throws -> [WebhookEndpoint] {
        try await StoreConformance.withRunning(try SQLiteStore(url: url)) { try await $0.webhookEndpoints(app: nil) }
    }

    @Test("create, pause, resume, test, replay, rotate and delete act on the database as the API does")
    func lifecycle() async throws {
        try await run([
            "create", "--topic", "com.example.app", "--url", "https://hooks.example.com/h", "--events",
            "send.completed, token.removed", "--description", "CRM",
        ])
        let created = try #require(try await endpoints().first)
        #expect(created.app == "com.example.app" && created.events == [.sendCompleted, .tokenRemoved])
        let id = created.id.uuidString.lowercased()
        try await run(["pause", id])
        #expect(try await endpoints().first?.pausedReason == "Paused by an administrator.")
        try await run(["resume", id])
        #expect(try await endpoints().first?.status == .active)
        try await run(["test", id])
        try await run(["rotate-secret", id, "--overlap", "60"])
        #expect(try await endpoints().first?.previousSecretExpiresAt != nil)
        try await run(["replay", id])
        try await run(["list"])
        try await run(["show", id])
        let queues = try await StoreConformance.withRunning(try SQLiteStore(url: url)) { try await $0.webhookQueues() }
        #expect(queues[created.id]?.pending == 1, "the test event waits for a running server")
        try await run(["delete", id])
        #expect(try await endpoints().isEmpty)
        await #expect(throws: ExitCode.self) { try await run(["delete", id]) }
        let entries = try await StoreConformance.withRunning(try SQLiteStore(url: url)) { store in
            try await store.auditEntries(AuditQuery(), after: nil, limit: 20).entries.reversed()
        }
        #expect(
            entries.map(\.action) == [
                .webhookCreated, .webhookPaused, .webhookResumed, .webhookSecretRotated, .webhookReplayed, .webhookDeleted,
            ], "each change once, a test event and the refused delete none: \(entries.map(\.action))")
        #expect(entries.allSatisfy { $0.actor.kind == .cli && $0.app == "com.example.app" && $0.subject == id })
        #expect(entries.first?.detail == "https://hooks.example.com/h for send.completed, token.removed")
    }

    @Test("the audit log names an endpoint by its URL without query: a receiver's token may ride there")
    func auditWithoutQuery() async throws {
        try await run([
            "create", "--topic", "com.example.app", "--url", "https://hooks.example.com/h?token=receiver-secret",
            "--events", "send.completed",
        ])
        let entry = try #require(
            try await StoreConformance.withRunning(try SQLiteStore(url: url)) { store in
                try await store.auditEntries(AuditQuery(), after: nil, limit: 1).entries.first
            })
        #expect(entry.action == .webhookCreated && entry.detail == "https://hooks.example.com/h for send.completed")
    }

    @Test("mistakes are refused before the database is touched", arguments: [
        ["create", "--topic", "com.example.app", "--url", "ftp://x", "--events", "send.completed"],
        ["create", "--topic", "com.example.app", "--url", "https://x.example", "--events", "send.sent"],
        ["create", "--topic", "com.example.app", "--url", "https://x.example", "--events", ""],
        // The API's and the console's rule (WebhookEndpointRules.problem(withDescription:)); the CLI once took it.
        ["create", "--topic", "com.example.app", "--url", "https://x.example", "--events", "send.completed", "--description", "a\u{7}b"],
        ["pause", "not-an-id"],
        ["rotate-secret", "00000000-0000-0000-0000-000000000000", "--overlap", "-1"],
    ])
    func refused(arguments: [String]) async throws {
        await #expect(throws: (any Error).self) { try await run(arguments) }
        #expect(!FileManager.default.fileExists(atPath: temporary.url.appendingPathComponent("herald.sqlite").path))
    }

    @Test("the app is checked against the server's, as the API checks it: unknown or unnamed among several is refused")
    func appsOfTheServer() async throws {
        let config = try configurationFile(servingApps: ["com.alpha.app", "com.beta.app"], in: temporary)
        func create(_ topic: [String]) async throws {
            var command = try #require(
                try Herald.parseAsRoot(
                    ["webhooks", "create", "--url", "https://hooks.example.com/h", "--events", "send.completed"] + topic
                        + ["--database-url", url, "--config", config]) as? any AsyncParsableCommand)
            try await command.run()
        }
        // Before, the command stored an endpoint for any app it was given.
        await #expect(throws: ExitCode.self) { try await create(["--topic", "com.gamma.app"]) }
        await #expect(throws: ExitCode.self) { try await create([]) }
        #expect(try await endpoints().isEmpty)
        try await create(["--topic", "com.beta.app"])
        #expect(try await endpoints().map(\.app) == ["com.beta.app"])
    }

    @Test("with the server's one app, --topic may be left out, as in the API")
    func onlyApp() async throws {
        try await run(["create", "--url", "https://hooks.example.com/h", "--events", "send.completed"])
        #expect(try await endpoints().map(\.app) == ["com.example.app"])
    }
}
