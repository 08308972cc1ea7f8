import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var preferenceCases: [Case] {
        [
            Case(
                "preferences are kept per app and subject; a category set back to null follows the default again",
                preferenceChoices),
            Case(
                "a send's preference rule keeps the devices whose user, installation or token lets its category through",
                preferenceFilter),
            Case(
                "a send keeps its suppressed counts by rule (preference, quiet hours dropped and deferred) on every insert path",
                suppressedCounts),
        ]
    }

    static func suppressedCounts(_ context: Context) async throws {
        let store = context.store
        let counts = SuppressedCounts(preference: 3, quietHoursDropped: 5, quietHoursDeferred: 7)
        let queued = try await store.createSend(
            NewSend(target: "every device", summary: "alert push", job: "{}", targetCount: 10, suppressed: counts))
        #expect(queued.suppressed == counts)
        #expect(try await store.send(queued.id)?.suppressed == counts)
        let finished = try await store.recordFinishedSend(
            NewSend(target: "every device", summary: "alert push", status: .completed, targetCount: 0, suppressed: counts),
            outcomes: [])
        #expect(finished.suppressed == counts)
        #expect(try await store.send(finished.id)?.suppressed == counts)
        #expect(try await store.send(finished.id)?.suppressed.total == 8, "deferred devices are not left out")
    }

    static func preferenceChoices(_ context: Context) async throws {
        let store = context.store
        let alice = PreferenceSubject.user("alice")
        #expect(try await store.preferences(topic: topic, subject: alice) == StoredPreferences())

        let first = context.clock.now()
        let chosen = try await store.updatePreferences(
            topic: topic, subject: alice, choices: ["marketing": false, "social": true], at: first)
        #expect(chosen == StoredPreferences(choices: ["marketing": false, "social": true], updatedAt: first))
        #expect(try await store.preferences(topic: topic, subject: alice) == chosen)

        // Another app, another subject of the same name, another kind of subject: nothing shared.
        #expect(try await store.preferences(topic: "com.example.other", subject: alice).choices.isEmpty)
        #expect(try await store.preferences(topic: topic, subject: .user("bob")).choices.isEmpty)
        let installation = UUID()
        #expect(try await store.preferences(topic: topic, subject: .installation(installation)).choices.isEmpty)

        context.clock.advance(by: .seconds(60))
        let later = context.clock.now()
        let changed = try await store.updatePreferences(
            topic: topic, subject: alice, choices: ["marketing": true, "social": nil, "orders": nil], at: later)
        #expect(changed == StoredPreferences(choices: ["marketing": true], updatedAt: later))
        let cleared = try await store.updatePreferences(
            topic: topic, subject: alice, choices: ["marketing": nil], at: later)
        #expect(cleared == StoredPreferences())
    }

    static func preferenceFilter(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        // 1, 2: alice's two devices; 3: an installation without a user; 4: a bare token; 5: bob; 6: another app's
        // device of alice, whose choices there are not this app's.
        _ = try await store.upsert(registration(1, user: "alice"))
        _ = try await store.upsert(registration(2, environment: .development, user: "alice"))
        _ = try await store.upsert(registration(3, installation: installation))
        _ = try await store.upsert(registration(4))
        _ = try await store.upsert(registration(5, user: "bob"))
        _ = try await store.upsert(registration(6, topic: "com.example.other", user: "alice"))
        let now = context.clock.now()
        _ = try await store.updatePreferences(topic: topic, subject: .user("alice"), choices: ["marketing": false], at: now)
        _ = try await store.updatePreferences(
            topic: topic, subject: .installation(installation), choices: ["marketing": false, "news": true], at: now)
        _ = try await store.updatePreferences(topic: topic, subject: .token(token(4)), choices: ["news": true], at: now)
        _ = try await store.updatePreferences(
            topic: "com.example.other", subject: .user("alice"), choices: ["news": true], at: now)

        func tokens(_ query: DeviceQuery) async throws -> [Int] {
            let devices = try await all(store, query, pageSize: 2)
            #expect(try await store.count(matching: query) == devices.count, "count agrees with \(query)")
            return devices.map { Int($0.token.hex, radix: 16)! }.sorted()
        }
        let marketing = PreferenceFilter(category: "marketing", enabledByDefault: true)
        let news = PreferenceFilter(category: "news", enabledByDefault: false)
        #expect(try await tokens(.topic(topic).preference(marketing)) == [4, 5], "on by default: opted out are left")
        #expect(try await tokens(.topic(topic).preference(news)) == [3, 4], "off by default: only those who opted in")
        #expect(try await tokens(.topic(topic).preference(nil)) == [1, 2, 3, 4, 5])
        #expect(try await tokens(.user("alice").preference(marketing)) == [6], "her choice is this app's only")
        #expect(try await tokens(.user("alice").inTopic(topic).preference(marketing)) == [])
        #expect(try await tokens(.user("alice").preference(news)) == [6], "another app's choice holds there only")
        #expect(
            try await tokens(.topic(topic).preference(PreferenceFilter(category: "orders", enabledByDefault: true)))
                == [1, 2, 3, 4, 5])
        // One explicit token: no backend may answer from its by-key read without the rule.
        #expect(try await tokens(.tokens([token(1)]).preference(marketing)) == [])
        #expect(try await tokens(.tokens([token(4)]).preference(news)) == [4])
        #expect(try await tokens(.tokens([token(1), token(5)]).preference(marketing)) == [5])
    }
}
