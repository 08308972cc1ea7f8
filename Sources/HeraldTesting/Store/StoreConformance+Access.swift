import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Keys scoped to apps, sends by app, and the audit log (issue 29).
extension StoreConformance {
    static var accessCases: [Case] {
        [
            Case("a key keeps its apps, environment and expiry, and records its last use at most once a resolution", scopedKeys),
            Case("sends keep their app, and a page of sends can be limited to some apps", sendsByApp),
            Case("the audit log keeps who, when, from where and what, pages newest first and filters", auditLog),
            Case("retention deletes audit entries older than the cutoff", auditRetention),
        ]
    }

    static func scopedKeys(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        let scoped = try await store.createAPIKey(
            name: "alpha", scopes: [.send], apps: ["com.alpha.app", "com.alpha.watch"], environment: .production,
            expiresAt: now.addingTimeInterval(86_400), at: now)
        let open = try await store.createAPIKey(name: "everything", scopes: [.admin], at: now)
        let read = try #require(try await store.apiKey(forSecret: scoped.secret.value))
        #expect(read == scoped.key)
        #expect(read.apps == ["com.alpha.app", "com.alpha.watch"] && read.environment == .production)
        #expect(read.expiresAt == now.addingTimeInterval(86_400) && read.lastUsedAt == nil)
        #expect(read.allows(app: "com.alpha.app") && !read.allows(app: "com.beta.app"))
        #expect(read.allows(environment: .production) && !read.allows(environment: .development))
        #expect(read.isUsable(at: now) && !read.isUsable(at: now.addingTimeInterval(86_400)))
        let unscoped = try #require(try await store.apiKey(forSecret: open.secret.value))
        #expect(unscoped.apps.isEmpty && unscoped.environment == nil && unscoped.expiresAt == nil)
        #expect(unscoped.allows(app: "anything"))

        #expect(try await store.recordAPIKeyUse(scoped.key.id, at: now, resolution: 60))
        #expect(try await !store.recordAPIKeyUse(scoped.key.id, at: now.addingTimeInterval(30), resolution: 60))
        #expect(try await store.apiKeys().first { $0.id == scoped.key.id }?.lastUsedAt == now)
        #expect(try await store.recordAPIKeyUse(scoped.key.id, at: now.addingTimeInterval(61), resolution: 60))
        #expect(try await store.apiKeys().first { $0.id == scoped.key.id }?.lastUsedAt == now.addingTimeInterval(61))
        #expect(try await store.apiKeys().first { $0.id == open.key.id }?.lastUsedAt == nil)
    }

    static func sendsByApp(_ context: Context) async throws {
        let store = context.store
        let alpha = try await store.createSend(NewSend(target: "topic", summary: "a", lane: .background, topic: "com.alpha.app"))
        context.clock.advance(by: .seconds(1))
        let beta = try await store.recordFinishedSend(
            NewSend(target: "token", summary: "b", status: .completed, topic: "com.beta.app"), outcomes: [])
        context.clock.advance(by: .seconds(1))
        let none = try await store.createSend(NewSend(target: "topic", summary: "old"))
        #expect(alpha.topic == "com.alpha.app" && beta.topic == "com.beta.app" && none.topic == nil)
        #expect(try await store.send(beta.id)?.topic == "com.beta.app")
        let all = try await store.recentSends(after: nil, limit: 10).sends.map(\.id)
        #expect(all == [none.id, beta.id, alpha.id])
        let onlyAlpha = try await store.recentSends(after: nil, limit: 10, topics: ["com.alpha.app"]).sends.map(\.id)
        #expect(onlyAlpha == [alpha.id])
        let both = try await store.recentSends(after: nil, limit: 1, topics: ["com.alpha.app", "com.beta.app"])
        #expect(both.sends.map(\.id) == [beta.id])
        let rest = try await store.recentSends(after: both.next, limit: 1, topics: ["com.alpha.app", "com.beta.app"])
        #expect(rest.sends.map(\.id) == [alpha.id] && rest.next == nil)
        #expect(try await store.recentSends(after: nil, limit: 10, topics: []).sends.isEmpty)
    }

    static func auditLog(_ context: Context) async throws {
        let store = context.store
        let key = UUID()
        let admin = AuditActor(kind: .apiKey, keyID: key, name: "ops")
        var made: [AuditEntry] = []
        for (index, (action, app)) in [
            (AuditAction.keyCreated, nil), (.sendCreated, "com.alpha.app"), (.sendCancelled, "com.alpha.app"),
            (.channelCreated, "com.beta.app"),
        ].enumerated() {
            let entry = AuditEntry(
                at: context.clock.now(), actor: index == 3 ? AuditActor(kind: .cli, keyID: nil, name: "root") : admin,
                address: index == 3 ? nil : "10.0.0.\(index)", action: action, app: app, subject: "s\(index)",
                detail: "change \(index)")
            try await store.recordAudit(entry)
            made.append(entry)
            context.clock.advance(by: .seconds(1))
        }
        let all = try await store.auditEntries(AuditQuery(), after: nil, limit: 100)
        #expect(all.entries == made.reversed() && all.next == nil)
        let first = try await store.auditEntries(AuditQuery(), after: nil, limit: 3)
        #expect(first.entries.map(\.subject) == ["s3", "s2", "s1"])
        let second = try await store.auditEntries(AuditQuery(), after: first.next, limit: 3)
        #expect(second.entries.map(\.subject) == ["s0"] && second.next == nil)
        let cursor = try #require(first.next)
        #expect(AuditCursor(cursor.description) == cursor)
        #expect(try await store.auditEntries(AuditQuery(apps: ["com.alpha.app"]), after: nil, limit: 10).entries
            .map(\.subject) == ["s2", "s1"])
        #expect(try await store.auditEntries(AuditQuery(apps: []), after: nil, limit: 10).entries.isEmpty)
        #expect(try await store.auditEntries(AuditQuery(keyID: key), after: nil, limit: 10).entries.count == 3)
        #expect(try await store.auditEntries(AuditQuery(action: .sendCancelled), after: nil, limit: 10).entries
            .map(\.subject) == ["s2"])
        #expect(try await store.auditEntries(
            AuditQuery(apps: ["com.alpha.app"], keyID: key, action: .sendCreated), after: nil, limit: 10
        ).entries.map(\.subject) == ["s1"])
        await #expect(throws: StoreError.self) {
            try await store.recordAudit(
                AuditEntry(at: context.clock.now(), actor: admin, action: .keyCreated, detail: String(repeating: "x", count: 1_001)))
        }
        #expect(try await store.auditEntries(AuditQuery(), after: nil, limit: 100).entries.count == 4, "refused: nothing kept")
    }

    static func auditRetention(_ context: Context) async throws {
        let store = context.store
        let actor = AuditActor(kind: .console, keyID: nil, name: "one-time link")
        for index in 0..<5 {
            try await store.recordAudit(
                AuditEntry(at: context.clock.now(), actor: actor, action: .signedIn, subject: "\(index)"))
            context.clock.advance(by: .seconds(10))
        }
        let cutoff = context.clock.now().addingTimeInterval(-25)
        var deleted = 0
        while true {
            let batch = try await store.deleteExpired(.auditLog, before: cutoff, limit: 2)
            deleted += batch.deleted
            if batch.finished { break }
        }
        #expect(deleted == 3)
        #expect(try await store.auditEntries(AuditQuery(), after: nil, limit: 10).entries.map(\.subject) == ["4", "3"])
    }
}
