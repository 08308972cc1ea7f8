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
            Case(
                "a send's audit entry is written with it, queued or finished, alone or in a batch, and not when the send is refused",
                sendsWithAuditEntries),
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

    static func sendsWithAuditEntries(_ context: Context) async throws {
        let store = context.store
        for n in 1...3 { _ = try await store.upsert(registration(n)) }
        let actor = AuditActor(kind: .apiKey, keyID: UUID(), name: "sender")
        func entry(_ subject: String, detail: String = "a send") -> AuditEntry {
            AuditEntry(
                at: context.clock.now(), actor: actor, address: "10.0.0.1", action: .sendCreated, app: topic,
                subject: subject, detail: detail)
        }
        func finished(_ id: SendID, _ n: Int, audit: AuditEntry?) -> (NewSend, [DeliveryOutcome]) {
            (
                NewSend(
                    id: id, target: "one token", summary: "s", status: .completed, targetCount: 1, topic: topic,
                    audit: audit),
                [
                    DeliveryOutcome(
                        token: token(n), environment: .production, result: .accepted(apnsID: APNSID()),
                        at: context.clock.now())
                ]
            )
        }
        let queued = SendID()
        _ = try await store.createSend(
            NewSend(id: queued, target: "every device", summary: "s", topic: topic, audit: entry("queued")))
        // A detail longer than the log keeps is cut, not a reason to refuse the send.
        let long = String(repeating: "é", count: 800)
        let (alone, aloneOutcomes) = finished(SendID(), 1, audit: entry("alone", detail: long))
        _ = try await store.recordFinishedSend(alone, outcomes: aloneOutcomes)
        // Finished together: a group commit may write them in one batch.
        let batch = (2...3).map { finished(SendID(), $0, audit: entry("batch \($0)")) }
        let unaudited = finished(SendID(), 1, audit: nil)
        try await withThrowingTaskGroup(of: SendRecord.self) { group in
            for (send, outcomes) in batch + [unaudited] {
                group.addTask { try await store.recordFinishedSend(send, outcomes: outcomes) }
            }
            for try await record in group { #expect(record.status == .completed && record.counts.accepted == 1) }
        }
        // The same ids again: refused, and no second entry.
        await #expect(throws: StoreError.self) {
            try await store.createSend(NewSend(id: queued, target: "t", summary: "s", audit: entry("queued again")))
        }
        await #expect(throws: StoreError.self) {
            try await store.recordFinishedSend(
                NewSend(id: alone.id, target: "t", summary: "s", status: .completed, audit: entry("alone again")),
                outcomes: aloneOutcomes)
        }
        let entries = try await store.auditEntries(AuditQuery(action: .sendCreated), after: nil, limit: 100).entries
        #expect(Set(entries.compactMap(\.subject)) == ["queued", "alone", "batch 2", "batch 3"])
        let cut = try #require(entries.first { $0.subject == "alone" })
        #expect(cut.detail.utf8.count <= 1_000 && cut.detail.hasPrefix("éé") && cut.detail.hasSuffix("…"))
        #expect(cut.actor == actor && cut.address == "10.0.0.1" && cut.app == topic)
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
