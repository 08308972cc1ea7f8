import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var ownQuietHoursCases: [Case] {
        [
            Case(
                "a person's own quiet hours are kept with their choices per app and subject; null goes back to the app's",
                ownQuietHoursChoices),
            Case(
                "a query grouping by own quiet hours answers (zone, window) pairs and filters on them, one statement",
                ownQuietHoursGroups),
            Case(
                "retention deletes a token's own quiet hours with its choices, in the same batches; a person's and an installation's stay",
                ownQuietHoursRetention),
        ]
    }

    static func ownQuietHoursChoices(_ context: Context) async throws {
        let store = context.store
        let alice = PreferenceSubject.user("alice")
        let night = try #require(QuietHours("23:00-07:00"))
        let first = context.clock.now()
        let set = try await store.updatePreferences(
            topic: topic, subject: alice, choices: [:], quietHours: .own(.window(night)), at: first)
        #expect(set == StoredPreferences(quietHours: .window(night), updatedAt: first))
        #expect(try await store.preferences(topic: topic, subject: alice) == set)
        #expect(try await store.preferences(topic: "com.example.other", subject: alice).quietHours == nil)
        #expect(try await store.preferences(topic: topic, subject: .user("bob")).quietHours == nil)

        context.clock.advance(by: .seconds(60))
        let later = context.clock.now()
        let kept = try await store.updatePreferences(topic: topic, subject: alice, choices: ["social": false], at: later)
        #expect(kept == StoredPreferences(choices: ["social": false], quietHours: .window(night), updatedAt: later))
        let off = try await store.updatePreferences(
            topic: topic, subject: alice, choices: [:], quietHours: .own(.off), at: later)
        #expect(off.quietHours == .off)
        let back = try await store.updatePreferences(
            topic: topic, subject: alice, choices: ["social": nil], quietHours: .appWindow, at: later)
        #expect(back == StoredPreferences(), "nothing chosen any more")
    }

    static func ownQuietHoursGroups(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        let night = try #require(QuietHours("23:00-07:00"))
        // 1, 2: alice in Paris and Tokyo, her own window; 3: an installation in Paris that wants none; 4: a bare
        // token in Paris, 5: bob without a zone, both the app's window; 6: another app's device of alice.
        func register(_ registration: TokenRegistration, zone: String?) async throws {
            var registration = registration
            registration.timeZone = zone
            _ = try await store.upsert(registration)
        }
        try await register(registration(1, user: "alice"), zone: "Europe/Paris")
        try await register(registration(2, user: "alice"), zone: "Asia/Tokyo")
        try await register(registration(3, installation: installation), zone: "Europe/Paris")
        try await register(registration(4), zone: "Europe/Paris")
        try await register(registration(5, user: "bob"), zone: nil)
        try await register(registration(6, topic: "com.example.other", user: "alice"), zone: "Europe/Paris")
        let now = context.clock.now()
        _ = try await store.updatePreferences(
            topic: topic, subject: .user("alice"), choices: [:], quietHours: .own(.window(night)), at: now)
        _ = try await store.updatePreferences(
            topic: topic, subject: .installation(installation), choices: [:], quietHours: .own(.off), at: now)

        let grouping = DeviceQuery.topic(topic).groupingByOwnQuietHours()
        let aliceParis = DeviceQuery.ZoneWithOwnQuietHours(zone: "Europe/Paris", quietHours: .window(night))
        let aliceTokyo = DeviceQuery.ZoneWithOwnQuietHours(zone: "Asia/Tokyo", quietHours: .window(night))
        let none = DeviceQuery.ZoneWithOwnQuietHours(zone: "Europe/Paris", quietHours: .off)
        #expect(
            try await store.timeZones(matching: grouping)
                == DeviceTimeZones(zones: ["Europe/Paris"], includesUnset: true, ownQuietHours: [aliceParis, aliceTokyo, none]))
        #expect(
            try await store.timeZones(matching: .topic(topic))
                == DeviceTimeZones(zones: ["Europe/Paris", "Asia/Tokyo"], includesUnset: true),
            "a query that does not group answers zones alone")

        func tokens(_ query: DeviceQuery) async throws -> [Int] {
            let devices = try await all(store, query, pageSize: 2)
            #expect(try await store.count(matching: query) == devices.count, "count agrees with \(query)")
            return devices.map { Int($0.token.hex, radix: 16)! }.sorted()
        }
        #expect(try await tokens(grouping.timeZones(.init(zones: ["Europe/Paris"], includesUnset: false))) == [4])
        #expect(try await tokens(grouping.timeZones(.init(zones: [], includesUnset: true))) == [5])
        #expect(
            try await tokens(grouping.timeZones(.init(zones: [], includesUnset: false, ownQuietHours: [aliceParis, none])))
                == [1, 3])
        #expect(
            try await tokens(
                grouping.timeZones(.init(zones: ["Europe/Paris"], includesUnset: true, ownQuietHours: [aliceTokyo])))
                == [2, 4, 5])
        #expect(try await tokens(grouping.timeZones(.init(zones: [], includesUnset: false))) == [])
        // One explicit token: no backend may answer from its by-key read without the person's window.
        #expect(try await tokens(DeviceQuery.tokens([token(1)]).groupingByOwnQuietHours().timeZones(
            .init(zones: ["Europe/Paris"], includesUnset: false))) == [])
        #expect(try await tokens(DeviceQuery.tokens([token(1)]).groupingByOwnQuietHours().timeZones(
            .init(zones: [], includesUnset: false, ownQuietHours: [aliceParis]))) == [1])
        #expect(try await tokens(.user("alice").groupingByOwnQuietHours().timeZones(
            .init(zones: ["Europe/Paris"], includesUnset: false))) == [6], "her window is this app's only")
    }

    static func ownQuietHoursRetention(_ context: Context) async throws {
        let store = context.store
        let night = try #require(QuietHours("23:00-07:00"))
        let installation = UUID()
        // Tokens: 1 removed (a choice and its own window), 2 invalidated long ago (its own window), 3 invalidated
        // lately, 4 active; 5 alice's and 6 an installation's, both removed: their people's windows outlive them.
        _ = try await store.upsert(registration(1))
        _ = try await store.upsert(registration(2))
        _ = try await store.upsert(registration(3))
        _ = try await store.upsert(registration(4))
        _ = try await store.upsert(registration(5, user: "alice"))
        _ = try await store.upsert(registration(6, installation: installation))
        let now = context.clock.now()
        func ownWindow(_ subject: PreferenceSubject, choices: [String: Bool?] = [:]) async throws {
            _ = try await store.updatePreferences(
                topic: topic, subject: subject, choices: choices, quietHours: .own(.window(night)), at: now)
        }
        try await ownWindow(.token(token(1)), choices: ["marketing": true])
        for n in 2...4 { try await ownWindow(.token(token(n))) }
        try await ownWindow(.user("alice"))
        try await ownWindow(.installation(installation))
        for n in [1, 5, 6] { _ = try await store.remove(token(n)) }
        _ = try await store.invalidate(token: token(2), reason: .unregistered, at: nil)
        context.clock.advance(by: .seconds(86_400))
        let cutoff = context.clock.now()
        context.clock.advance(by: .seconds(60))
        _ = try await store.invalidate(token: token(3), reason: .unregistered, at: nil)

        // Token 2, token 1's choice and the windows of tokens 1 and 2: four rows, in batches of two.
        let run = try await deleteAll(.invalidatedTokens, before: cutoff, limit: 2, on: store)
        #expect(run.deleted == 4 && run.batches == 3, "\(run)")
        for n in [1, 2] {
            #expect(try await store.preferences(topic: topic, subject: .token(token(n))) == StoredPreferences())
        }
        for n in [3, 4] {
            #expect(try await store.preferences(topic: topic, subject: .token(token(n))).quietHours == .window(night))
        }
        #expect(try await store.preferences(topic: topic, subject: .user("alice")).quietHours == .window(night))
        #expect(try await store.preferences(topic: topic, subject: .installation(installation)).quietHours == .window(night))
        #expect(try await deleteAll(.invalidatedTokens, before: cutoff, limit: 2, on: store).deleted == 0)
    }
}
