import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var consoleCases: [Case] {
        [
            Case(
                "console sessions are found by id hash, touched, expired and deleted; revoking their key ends them",
                consoleSessions),
            Case("a one-time sign-in link works once, on any instance, and not after it expires", signInLinks),
            Case("the overview counts active devices four ways, new devices per day, sends and reasons", overview),
            Case(
                "sends are listed newest first in pages; a send's outcomes are grouped; a device's deliveries are listed",
                consoleLists),
            Case("devices are found by the last hex digits of their token", tokenSuffixSearch),
        ]
    }

    static func consoleSessions(_ context: Context) async throws {
        let store = context.store
        let key = try await store.createAPIKey(name: "ops", scopes: [.admin], at: context.clock.now()).key
        let now = context.clock.now()
        let keyed = ConsoleSession(idHash: "a1", csrfToken: "c1", apiKey: key, createdAt: now, lastSeenAt: now)
        let linked = ConsoleSession(idHash: "b2", csrfToken: "c2", apiKey: nil, createdAt: now, lastSeenAt: now)
        try await store.createConsoleSession(keyed)
        try await store.createConsoleSession(linked)
        await #expect(throws: StoreError.self) { try await store.createConsoleSession(keyed) }
        #expect(try await store.consoleSession(idHash: "a1") == keyed)
        #expect(try await store.consoleSession(idHash: "b2") == linked)
        #expect(try await store.consoleSession(idHash: "zz") == nil)

        let later = now.addingTimeInterval(600)
        try await store.touchConsoleSession(idHash: "b2", at: later)
        #expect(try await store.consoleSession(idHash: "b2")?.lastSeenAt == later)
        #expect(try await store.deleteConsoleSessions(lastSeenBefore: now.addingTimeInterval(1)) == 1)
        #expect(try await store.consoleSession(idHash: "a1") == nil, "idle since before the moment: deleted")
        #expect(try await store.deleteConsoleSession(idHash: "b2"))
        #expect(try await !store.deleteConsoleSession(idHash: "b2"))
        #expect(try await store.consoleSession(idHash: "b2") == nil)

        try await store.createConsoleSession(keyed)
        #expect(try await store.revokeAPIKey(key.id))
        #expect(try await store.consoleSession(idHash: "a1") == nil, "a revoked key's session no longer signs in")
    }

    static func signInLinks(_ context: Context) async throws {
        let store = context.store
        let now = context.clock.now()
        try await store.createSignInLink(tokenHash: "once", expiresAt: now.addingTimeInterval(3600))
        try await store.createSignInLink(tokenHash: "stale", expiresAt: now.addingTimeInterval(60))
        #expect(try await !store.consumeSignInLink(tokenHash: "unknown", at: now))
        #expect(try await store.consumeSignInLink(tokenHash: "once", at: now))
        #expect(try await !store.consumeSignInLink(tokenHash: "once", at: now), "a link works once")
        try await context.withSecondInstance { (other) async throws in
            #expect(try await !other.consumeSignInLink(tokenHash: "once", at: now), "on every instance")
            #expect(try await !other.consumeSignInLink(tokenHash: "stale", at: now.addingTimeInterval(60)))
        }
    }

    static func overview(_ context: Context) async throws {
        let store = context.store
        let start = context.clock.now()
        #expect(try await store.deviceStatistics() == DeviceStatistics())
        for n in 1...6 {
            var registration = registration(
                n, topic: n <= 4 ? topic : "com.example.other", environment: n.isMultiple(of: 2) ? .development : .production,
                kind: n == 6 ? .voip : .device)
            registration.platform = n <= 3 ? .iOS : nil
            _ = try await store.upsert(registration)
            if n == 3 { context.clock.advance(by: .seconds(86_400)) }
        }
        _ = try await store.invalidate(token: token(5), reason: .unregistered, at: nil)
        let statistics = try await store.deviceStatistics()
        #expect(statistics.total == 5)
        #expect(statistics.byTopic == [Tally(topic, 4), Tally("com.example.other", 1)])
        #expect(statistics.byEnvironment == [Tally("development", 3), Tally("production", 2)])
        #expect(statistics.byTokenKind == [Tally("device", 4), Tally("voip", 1)])
        #expect(statistics.byPlatform == [Tally("iOS", 3), Tally("", 2)])
        let days = try await store.newDevicesPerDay(since: start.addingTimeInterval(-86_400))
        #expect(days.map(\.count) == [3, 3] && days[1].day.timeIntervalSince(days[0].day) == 86_400)
        #expect(days[0].day.timeIntervalSince1970.truncatingRemainder(dividingBy: 86_400) == 0)

        let send = try await store.createSend(NewSend(target: "every device", summary: "alert push", status: .running))
        let now = context.clock.now()
        _ = try await store.recordOutcomes(
            [
                outcome(1, .accepted(apnsID: APNSID()), at: now),
                outcome(2, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed),
                outcome(3, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now, action: .removed),
                outcome(4, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .kept),
                outcome(6, .failed(message: "timed out"), at: now),
            ], for: send.id, checkpoint: nil)
        _ = try await store.createSend(NewSend(target: "user a", summary: "alert push", status: .completed))
        let statisticsOfSends = try await store.sendStatistics(since: now.addingTimeInterval(-60), reasons: 1)
        #expect(statisticsOfSends.sends == 2 && statisticsOfSends.removed == 2)
        #expect(statisticsOfSends.counts == OutcomeCounts(accepted: 1, rejected: 3, failed: 1))
        #expect(statisticsOfSends.topReasons == [Tally("Unregistered", 2)])
        #expect(try await store.sendStatistics(since: now.addingTimeInterval(60), reasons: 5).sends == 0)
        let perDay = try await store.sendsPerDay(since: start)
        #expect(perDay.count == 1 && perDay[0].sends == 2 && perDay[0].counts.total == 5)
    }

    static func consoleLists(_ context: Context) async throws {
        let store = context.store
        var created: [SendRecord] = []
        for n in 1...5 {
            created.append(try await store.createSend(NewSend(target: "user u\(n)", summary: "alert push")))
            if n != 3 { context.clock.advance(by: .seconds(1)) }
        }
        var listed: [SendRecord] = []
        var cursor: SendListCursor?
        repeat {
            let page = try await store.recentSends(after: cursor, limit: 2)
            #expect(page.sends.count <= 2)
            listed += page.sends
            cursor = page.next
            if let next = page.next { #expect(SendListCursor(next.description) == next) }
        } while cursor != nil
        let expected = created.sorted {
            ($0.createdAt, $0.id.description) > ($1.createdAt, $1.id.description)
        }
        #expect(listed.map(\.id) == expected.map(\.id), "newest first, ties by id, each once")

        let now = context.clock.now()
        let send = created[0]
        _ = try await store.recordOutcomes(
            [
                outcome(1, .accepted(apnsID: APNSID()), at: now),
                outcome(2, .accepted(apnsID: APNSID()), at: now),
                outcome(3, .rejected(status: 410, reason: .unregistered, timestamp: now), at: now, action: .removed),
            ], for: send.id, checkpoint: nil)
        _ = try await store.recordOutcomes(
            [outcome(1, .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), at: now.addingTimeInterval(5))],
            for: created[1].id, checkpoint: nil)
        #expect(
            try await outcomeGroups(of: send.id, in: store) == [
                OutcomeGroup(kind: "accepted", reason: nil, action: nil, count: 2),
                OutcomeGroup(kind: "rejected", reason: "Unregistered", action: .removed, count: 1),
            ])
        let deliveries = try await store.deliveries(to: token(1), limit: 10)
        #expect(deliveries.map(\.sendID) == [created[1].id, send.id], "newest first")
        #expect(deliveries.first?.target == "user u2" && deliveries.first?.summary == "alert push")
        #expect(try await store.deliveries(to: token(1), limit: 1).count == 1)
        #expect(try await store.deliveries(to: token(9), limit: 10).isEmpty)
    }

    static func tokenSuffixSearch(_ context: Context) async throws {
        let store = context.store
        for n in [0x1abc, 0x2abc, 0x3abd] { _ = try await store.upsert(registration(n)) }
        _ = try await store.invalidate(token: token(0x2abc), reason: .unregistered, at: nil)
        #expect(try await store.devices(withTokenSuffix: "abc", limit: 10).map(\.token) == [token(0x1abc), token(0x2abc)])
        #expect(try await store.devices(withTokenSuffix: "abc", limit: 1).count == 1)
        #expect(try await store.devices(withTokenSuffix: "3abd", limit: 10).map(\.token) == [token(0x3abd)])
        // From 8 digits on, through the suffix index: its last 8, and longer suffixes checked whole.
        let whole = token(0x1abc).hex
        #expect(try await store.devices(withTokenSuffix: String(whole.suffix(8)), limit: 10).map(\.token) == [token(0x1abc)])
        #expect(try await store.devices(withTokenSuffix: String(whole.suffix(20)), limit: 10).map(\.token) == [token(0x1abc)])
        #expect(try await store.devices(withTokenSuffix: whole, limit: 10).map(\.token) == [token(0x1abc)])
        #expect(try await store.devices(withTokenSuffix: "f" + String(whole.suffix(8)), limit: 10).isEmpty)
        #expect(try await store.devices(withTokenSuffix: "ffff", limit: 10).isEmpty)
    }
}
