import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var tokenCases: [Case] {
        [
            Case("an upsert creates a registration, and the next one updates it completely", upsertCreatesThenUpdates),
            Case(
                "registering the same body twice stores one record; tags are replaced, not merged", upsertIsIdempotent),
            Case(
                "a new token for an installation, topic and kind moves the old one aside", installationMovesTokenAside),
            Case("Live Activity and Push to Talk tokens of one installation coexist", severalTokensPerInstallation),
            Case("remove deletes a token and its tags, and says whether it existed", removeDeletes),
            Case(
                "2,500 tokens page by 1,000 with no duplicate and no gap, even with inserts between pages", pagination),
            Case("queries select by user, tag, topic, environment and kind, and counts agree", queries),
            Case("explicit token lists skip unknown tokens and page in chunks", explicitTokens),
            Case(
                "a one-token query filters as a query of several tokens does, by every filter and after a cursor",
                singleTokenFilters),
            Case("a 410 older than the last registration keeps the token", invalidationKeepsReregistered),
            Case(
                "a 410 newer than the last registration invalidates until the app registers again", invalidationRemoves),
            Case("ExpiredToken invalidates without a timestamp; unknown tokens are not found", expiredToken),
            Case("the BadDeviceToken correction moves a token to the other environment", environmentCorrection),
            Case("purging deletes only tokens invalidated before the cutoff", purge),
            Case("concurrent upserts of one token leave one record and raise no error", concurrentUpserts),
            Case("a registration that breaks a limit is refused and writes nothing", invalidRegistration),
            Case(
                "time zones and Live Activity ids are stored, read back, replaced and cleared; misplaced ones refused",
                timeZonesAndActivities),
            Case(
                "a Live Activity token replaces only its installation's token of the same activity id, or attributes type",
                activityTokensReplaceTheirOwn),
            Case(
                "a web push subscription is stored under its endpoint's token, read back whole, re-registered in place; a misfit refused",
                webPushSubscriptions),
        ]
    }

    /// A browser subscription as a test registers it: an endpoint on Apple's push service and RFC 8291's keys.
    static func webSubscription(_ n: Int) throws -> WebPushSubscription {
        try WebPushSubscription(
            endpoint: "https://web.push.apple.com/QGuQyavXutnMH6Ig2uYOJDwA-\(n)",
            p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
            auth: "BTBZMqHH6r4Tts7J_aSIgg")
    }

    static func webPushSubscriptions(_ context: Context) async throws {
        let store = context.store
        let subscription = try webSubscription(1)
        var web = TokenRegistration(
            token: subscription.token, topic: topic, environment: .production, tokenKind: .webPush, userID: "ada",
            tags: ["news"], webPush: subscription)
        let created = try await store.upsert(web)
        #expect(created.change == .created)
        let stored = try #require(try await store.device(subscription.token))
        #expect(stored.webPush == subscription && stored.tokenKind == .webPush && stored.userID == "ada")
        #expect(try await store.devices(matching: .user("ada"), after: nil, limit: 10).devices.map(\.webPush) == [subscription])

        // The browser renews its keys for the same endpoint: the same device, the new keys.
        let renewed = WebPushSubscription(
            endpoint: subscription.endpoint,
            // RFC 8291's application-server key: another valid P-256 point.
            keys: try WebPushSubscriptionKeys(
                p256dh: "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
                auth: "AAECAwQFBgcICQoLDA0ODw"))
        web.webPush = renewed
        #expect(try await store.upsert(web).change == .updated)
        #expect(try await store.device(subscription.token)?.webPush == renewed)
        #expect(try await store.count(matching: .topic(topic)) == 1)

        // Misfits change nothing: a webpush token without its subscription, one under another token, an APNs token
        // with a subscription.
        var misfits = [TokenRegistration]()
        var bare = web
        bare.token = try webSubscription(2).token
        bare.webPush = nil
        misfits.append(bare)
        var elsewhere = web
        elsewhere.token = token(9)
        misfits.append(elsewhere)
        var apns = registration(3)
        apns.webPush = try webSubscription(3)
        misfits.append(apns)
        for misfit in misfits {
            let error = await #expect(throws: StoreError.self) { try await store.upsert(misfit) }
            #expect(error?.code == .invalidRecord)
        }
        #expect(try await store.count(matching: .topic(topic)) == 1)
    }

    static func activityTokensReplaceTheirOwn(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        func activity(_ n: Int, _ kind: TokenKind, type: String? = nil, id: String? = nil) -> TokenRegistration {
            TokenRegistration(
                token: token(n), topic: topic, environment: .development, tokenKind: kind, installationID: installation,
                activityType: type, activityID: id)
        }
        for registration in [
            activity(1, .liveActivity, id: "order-1"), activity(2, .liveActivity, id: "order-2"),
            activity(3, .liveActivityStart, type: "Delivery"), activity(4, .liveActivityStart, type: "Match"),
        ] {
            #expect(try await store.upsert(registration).movedAside.isEmpty, "other activities and types coexist")
        }
        let rotated = try await store.upsert(activity(5, .liveActivity, id: "order-1"))
        #expect(rotated.movedAside == [token(1)], "a rotated update token replaces its activity's old one")
        let restarted = try await store.upsert(activity(6, .liveActivityStart, type: "Match"))
        #expect(restarted.movedAside == [token(4)], "a new push-to-start token replaces the one of its type")
        let left = try await store.devices(matching: .topic(topic), after: nil, limit: 10).devices.map(\.token)
        #expect(Set(left) == [token(2), token(3), token(5), token(6)])
    }

    static func timeZonesAndActivities(_ context: Context) async throws {
        let store = context.store
        var device = TokenRegistration(
            token: token(1), topic: topic, environment: .development, timeZone: "Asia/Tokyo")
        let start = TokenRegistration(
            token: token(2), topic: topic, environment: .development, tokenKind: .liveActivityStart,
            installationID: UUID(), timeZone: "America/New_York", activityType: "DeliveryAttributes")
        let update = TokenRegistration(
            token: token(3), topic: topic, environment: .development, tokenKind: .liveActivity,
            installationID: start.installationID, activityID: "order-1234")
        for registration in [device, start, update] {
            #expect(try await store.upsert(registration).registration.registration == registration)
            #expect(try await store.device(registration.token)?.registration == registration, "read back as written")
        }
        let listed = try await store.devices(matching: .topic(topic), after: nil, limit: 10).devices
        #expect(listed.map(\.registration) == [device, start, update], "pages read the same columns")

        device.timeZone = "Europe/Paris"
        #expect(try await store.upsert(device).registration.timeZone == "Europe/Paris", "a registration replaces it")
        device.timeZone = nil
        #expect(try await store.upsert(device).registration.timeZone == nil, "and one without it clears it")

        var misplaced = device
        misplaced.activityID = "order-1"
        var unknownZone = device
        unknownZone.timeZone = "Mars/Olympus_Mons"
        var startWithID = start
        startWithID.activityID = "order-1"
        for invalid in [misplaced, unknownZone, startWithID] {
            await #expect(throws: StoreError.self) { try await store.upsert(invalid) }
        }
        #expect(try await store.device(device.token)?.registration == device, "nothing was written")
    }

    static func upsertCreatesThenUpdates(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        var registration = TokenRegistration(
            token: token(1), topic: topic, environment: .development, tokenKind: .voip, userID: "user-42",
            installationID: installation, preferredLanguages: ["fr-CA", "en"], appVersion: "2.1",
            platform: .iOS, tags: ["beta", "paid", "beta"])
        let created = try await store.upsert(registration)
        #expect(created.change == .created)
        #expect(created.movedAside.isEmpty && !created.reactivated)
        let first = created.registration
        #expect(first.registration == (try registration.validated()))
        #expect(first.tags == ["beta", "paid"], "duplicate tags are dropped, order kept")
        #expect(first.registeredAt == context.clock.now() && first.createdAt == first.registeredAt)
        #expect(first.isActive)
        #expect(try await store.device(token(1)) == first)

        context.clock.advance(by: .seconds(60))
        registration.environment = .production
        registration.userID = nil
        registration.appVersion = nil
        registration.platform = nil
        registration.preferredLanguages = []
        registration.tags = ["free"]
        let updated = try await store.upsert(registration)
        #expect(updated.change == .updated)
        let second = updated.registration
        #expect(second.environment == .production && second.userID == nil && second.appVersion == nil)
        #expect(second.platform == nil && second.preferredLanguages.isEmpty && second.tags == ["free"])
        #expect(second.createdAt == first.createdAt, "creation time survives updates")
        #expect(second.registeredAt == context.clock.now() && second.updatedAt == second.registeredAt)
        #expect(try await store.device(token(1)) == second)
        #expect(try await store.device(token(2)) == nil)
    }

    static func upsertIsIdempotent(_ context: Context) async throws {
        let store = context.store
        let registration = StoreConformance.registration(7, user: "u", tags: ["a", "b"], languages: ["de"])
        let first = try await store.upsert(registration)
        let second = try await store.upsert(registration)
        #expect(first.change == .created && second.change == .updated)
        #expect(second.registration == first.registration, "same body, same clock: same record")
        #expect(try await store.count(matching: .topic(topic)) == 1)
        #expect(try await store.count(matching: .tag("a")) == 1)

        var retagged = registration
        retagged.tags = ["c"]
        _ = try await store.upsert(retagged)
        #expect(try await store.count(matching: .tag("a")) == 0)
        #expect(try await store.count(matching: .tag("b")) == 0)
        #expect(try await all(store, .tag("c")).map(\.token) == [token(7)])
        #expect(try await store.device(token(7))?.tags == ["c"])
    }

    static func installationMovesTokenAside(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        _ = try await store.upsert(registration(1, installation: installation, tags: ["old"]))
        _ = try await store.upsert(registration(2, kind: .voip, installation: installation))
        _ = try await store.upsert(registration(3, topic: "com.example.other", installation: installation))
        _ = try await store.upsert(registration(4, installation: UUID()))
        _ = try await store.upsert(registration(5))

        let result = try await store.upsert(registration(9, installation: installation))
        #expect(result.change == .created)
        #expect(result.movedAside == [token(1)], "only the same installation, topic and kind")
        #expect(try await store.device(token(1)) == nil)
        #expect(try await store.count(matching: .tag("old")) == 0, "its tags went with it")
        for kept in [2, 3, 4, 5, 9] { #expect(try await store.device(token(kept)) != nil, "token \(kept) kept") }

        let again = try await store.upsert(registration(9, installation: installation))
        #expect(again.movedAside.isEmpty, "re-registering the current token moves nothing")
    }

    static func severalTokensPerInstallation(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        for kind in [TokenKind.liveActivity, .pushToTalk] {
            let base = kind == .liveActivity ? 10 : 20
            for n in base..<(base + 3) {
                let result = try await store.upsert(registration(n, kind: kind, installation: installation))
                #expect(result.movedAside.isEmpty, "\(kind) tokens coexist")
            }
            #expect(try await store.count(matching: .topic(topic).kinds([kind])) == 3)
        }
        _ = try await store.upsert(registration(30, kind: .liveActivityStart, installation: installation))
        let start = try await store.upsert(registration(31, kind: .liveActivityStart, installation: installation))
        #expect(start.movedAside == [token(30)], "push-to-start tokens are one per installation")
    }

    static func removeDeletes(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1, user: "u", tags: ["t"]))
        _ = try await store.upsert(registration(2, user: "u", tags: ["t"]))
        #expect(try await store.remove(token(1)))
        #expect(try await store.device(token(1)) == nil)
        #expect(try await !store.remove(token(1)), "a second remove finds nothing")
        #expect(try await all(store, .tag("t")).map(\.token) == [token(2)])
        #expect(try await all(store, .user("u")).map(\.token) == [token(2)])
        _ = try await store.upsert(registration(1))
        #expect(try await store.device(token(1))?.tags == [], "a removed token registers afresh")
    }

    static func pagination(_ context: Context) async throws {
        let store = context.store
        // Even numbers only, so the walk can insert odd tokens on both sides of its cursor.
        for chunk in stride(from: 0, to: 2_500, by: 100) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in chunk..<(chunk + 100) {
                    group.addTask {
                        _ = try await store.upsert(
                            registration(2 * n + 2, environment: n % 3 == 0 ? .development : .production))
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(try await store.count(matching: .topic(topic)) == 2_500)

        var seen: [DeviceRegistration] = []
        var cursor: DeviceCursor?
        var sizes: [Int] = []
        repeat {
            let page = try await store.devices(matching: .topic(topic), after: cursor, limit: 1_000)
            sizes.append(page.devices.count)
            seen += page.devices
            cursor = page.next
            if let cursor, sizes.count == 1 {
                // Register tokens before and after the cursor between two pages.
                _ = try await store.upsert(registration(1, environment: .development))
                _ = try await store.upsert(registration(4_999, environment: .production))
                #expect(DeviceCursor(cursor.description) == cursor, "a cursor survives its string form")
            }
        } while cursor != nil
        let original = Set((0..<2_500).map { token(2 * $0 + 2) })
        let tokens = seen.map(\.token)
        #expect(Set(tokens).count == tokens.count, "no duplicates")
        #expect(original.isSubset(of: Set(tokens)), "no gaps")
        #expect(sizes.prefix(2) == [1_000, 1_000])
        let order = seen.map { [$0.environment.name, $0.token.hex] }
        #expect(order == order.sorted { $0.lexicographicallyPrecedes($1) }, "stable order: environment, then token")

        var iterator = store.allDevices(matching: .topic(topic), pageSize: 1_000).makeAsyncIterator()
        _ = try await iterator.next()
        var batches = [1]
        while case let batch = try await iterator.nextPage(), !batch.isEmpty { batches.append(batch.count) }
        #expect(batches == [1, 999, 1_000, 502], "nextPage hands out the rest of a page, then whole pages")

        let production = try await all(store, .topic(topic).environment(.production), pageSize: 700)
        #expect(production.count == 2_500 - 834 + 1)
        #expect(production.map(\.token) == production.map(\.token).sorted())
        #expect(production.allSatisfy { $0.environment == .production })
    }

    static func queries(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1, user: "alice", tags: ["beta"]))
        _ = try await store.upsert(registration(2, environment: .development, user: "alice", tags: ["beta", "x"]))
        _ = try await store.upsert(registration(3, kind: .voip, user: "alice"))
        _ = try await store.upsert(registration(4, topic: "com.example.other", user: "alice", tags: ["beta"]))
        _ = try await store.upsert(registration(5, user: "bob", tags: ["x"]))
        _ = try await store.upsert(registration(6, kind: .liveActivity))

        func tokens(_ query: DeviceQuery) async throws -> [Int] {
            let devices = try await all(store, query, pageSize: 2)
            #expect(try await store.count(matching: query) == devices.count, "count agrees with \(query)")
            return devices.map { Int($0.token.hex, radix: 16)! }
        }
        #expect(try await tokens(.user("alice")) == [1, 2, 3, 4])
        #expect(try await tokens(.user("alice").inTopic(topic)) == [1, 2, 3])
        #expect(try await tokens(.user("alice").kinds([.device])) == [1, 2, 4])
        #expect(try await tokens(.user("alice").environment(.development)) == [2])
        #expect(try await tokens(.user("carol")) == [])
        #expect(try await tokens(.tag("beta")) == [1, 2, 4])
        #expect(try await tokens(.tag("beta").inTopic(topic).environment(.production)) == [1])
        #expect(try await tokens(.tag("x")) == [2, 5])
        #expect(try await tokens(.topic(topic)) == [2, 1, 3, 5, 6], "development first, then production")
        #expect(try await tokens(.topic(topic).kinds([.voip, .liveActivity])) == [3, 6])
        #expect(try await tokens(.topic(topic).kinds([])) == [])
        #expect(try await tokens(.topic("com.example.other")) == [4])
        #expect(try await tokens(.topic("com.example.none")) == [])
    }

    static func explicitTokens(_ context: Context) async throws {
        let store = context.store
        for n in 1...5 {
            _ = try await store.upsert(registration(n, environment: n.isMultiple(of: 2) ? .development : .production))
        }
        let query = DeviceQuery.tokens([token(5), token(1), token(99), token(3), token(1)])
        #expect(try await all(store, query, pageSize: 1).map(\.token) == [token(1), token(3), token(5)])
        #expect(try await all(store, query).map(\.token) == [token(1), token(3), token(5)])
        #expect(try await store.count(matching: query) == 3)
        #expect(try await store.count(matching: .tokens([])) == 0)
        #expect(try await store.devices(matching: .tokens([]), after: nil, limit: 10).devices.isEmpty)
        #expect(
            try await all(store, .tokens([token(2), token(3)]).environment(.development)).map(\.token) == [token(2)])
        let many = (1...2_100).map { token($0) }
        #expect(try await store.count(matching: .tokens(many)) == 5, "long lists are counted in chunks")
        #expect(try await all(store, .tokens(many)).count == 5)
    }

    /// A backend may read a one-token query's device by its key and filter it in memory (PostgreSQL does, with a
    /// prepared statement): its answers must be those of the SQL that filters a list of several tokens.
    static func singleTokenFilters(_ context: Context) async throws {
        let store = context.store
        let installation = UUID()
        let devices = [
            registration(1),
            TokenRegistration(
                token: token(2), topic: topic, environment: .development, timeZone: "Asia/Tokyo"),
            TokenRegistration(
                token: token(3), topic: topic, environment: .production, tokenKind: .liveActivityStart,
                installationID: installation, timeZone: "Europe/Paris", activityType: "Delivery"),
            registration(4, topic: "com.example.other", kind: .voip),
            registration(5),
        ]
        for device in devices { _ = try await store.upsert(device) }
        _ = try await store.invalidate(token: token(5), reason: .unregistered, at: nil)
        let filters: [(String, (DeviceQuery) -> DeviceQuery)] = [
            ("none", { $0 }),
            ("topic", { $0.inTopic(topic) }),
            ("other topic", { $0.inTopic("com.example.other") }),
            ("environment", { $0.environment(.development) }),
            ("kinds", { $0.kinds([.device, .voip]) }),
            ("no kinds", { $0.kinds([]) }),
            ("activity type", { $0.activityType("Delivery") }),
            ("time zones", { $0.timeZones(.init(zones: ["Asia/Tokyo", "Europe/Paris"], includesUnset: false)) }),
            ("unset time zone", { $0.timeZones(.init(zones: [], includesUnset: true)) }),
            ("no time zone", { $0.timeZones(.init(zones: [], includesUnset: false)) }),
            ("invalidated", { $0.includingInvalidated() }),
            ("everything", {
                $0.inTopic(topic).environment(.production).kinds([.liveActivityStart]).activityType("Delivery")
                    .timeZones(.init(zones: ["Europe/Paris"], includesUnset: true)).includingInvalidated()
            }),
        ]
        for (name, filter) in filters {
            for n in 1...6 {
                // The same token twice is one token; token 6 was never registered.
                let expected = try await all(store, filter(.tokens([token(n), token(99)]))).map(\.token)
                for query in [filter(.tokens([token(n)])), filter(.tokens([token(n), token(n)]))] {
                    let page = try await store.devices(matching: query, after: nil, limit: 1)
                    #expect(page.devices.map(\.token) == expected, "token \(n), filter \(name)")
                    #expect(page.next == nil)
                    #expect(try await store.count(matching: query) == expected.count, "token \(n), filter \(name)")
                }
            }
        }
        let cursor = DeviceCursor(environment: .production, token: token(1))
        #expect(try await store.devices(matching: .tokens([token(1)]), after: cursor, limit: 1).devices.isEmpty)
        let before = DeviceCursor(environment: .production, token: token(0))
        #expect(try await store.devices(matching: .tokens([token(1)]), after: before, limit: 1).devices.count == 1)
    }

    static func invalidationKeepsReregistered(_ context: Context) async throws {
        let store = context.store
        let apnsTimestamp = context.clock.now()
        context.clock.advance(by: .milliseconds(1))
        let registered = try await store.upsert(registration(1)).registration.registeredAt
        let result = try await store.invalidate(token: token(1), reason: .unregistered, at: apnsTimestamp)
        #expect(result == .keptBecauseReregistered(registeredAt: registered))
        #expect(try await store.device(token(1))?.isActive == true)
        #expect(try await store.count(matching: .topic(topic)) == 1)
    }

    static func invalidationRemoves(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1, user: "u", tags: ["t"]))
        _ = try await store.upsert(registration(2, user: "u", tags: ["t"]))
        let registeredAt = context.clock.now()
        context.clock.advance(by: .seconds(5))
        let apnsTimestamp = context.clock.now().addingTimeInterval(-1)
        #expect(try await store.invalidate(token: token(1), reason: .unregistered, at: apnsTimestamp) == .removed)
        #expect(
            try await store.invalidate(token: token(2), reason: .unregistered, at: registeredAt) == .removed,
            "a registration at the very moment of the timestamp does not save the token")

        let invalidated = try #require(try await store.device(token(1)))
        #expect(!invalidated.isActive)
        #expect(invalidated.invalidation?.reason == .unregistered)
        #expect(invalidated.invalidation?.apnsTimestamp == apnsTimestamp)
        #expect(invalidated.invalidation?.recordedAt == context.clock.now())
        for query in [DeviceQuery.topic(topic), .user("u"), .tag("t"), .tokens([token(1), token(2)])] {
            #expect(try await store.count(matching: query) == 0, "\(query) leaves invalidated tokens out")
            #expect(try await all(store, query.includingInvalidated()).count == 2)
        }
        #expect(
            try await store.invalidate(token: token(1), reason: .unregistered, at: nil) == .removed,
            "invalidating again is harmless")
        #expect(try await store.device(token(1))?.invalidation == invalidated.invalidation, "the first verdict is kept")

        context.clock.advance(by: .seconds(1))
        let back = try await store.upsert(registration(1, user: "u", tags: ["t"]))
        #expect(back.change == .updated && back.reactivated)
        #expect(back.registration.isActive)
        #expect(try await all(store, .tag("t")).map(\.token) == [token(1)])
    }

    static func expiredToken(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1))
        #expect(try await store.invalidate(token: token(1), reason: .expiredToken, at: nil) == .removed)
        let record = try await store.device(token(1))
        #expect(record?.invalidation?.reason == .expiredToken && record?.invalidation?.apnsTimestamp == nil)
        #expect(
            try await store.invalidate(token: token(9), reason: .unregistered, at: context.clock.now()) == .notFound)
    }

    static func environmentCorrection(_ context: Context) async throws {
        let store = context.store
        _ = try await store.upsert(registration(1, environment: .production))
        context.clock.advance(by: .seconds(3))
        let corrected = try #require(try await store.updateEnvironment(token: token(1), to: .development))
        #expect(corrected.environment == .development)
        #expect(corrected.updatedAt == context.clock.now() && corrected.registeredAt < corrected.updatedAt)
        #expect(try await store.count(matching: .topic(topic).environment(.production)) == 0)
        #expect(try await store.count(matching: .topic(topic).environment(.development)) == 1)
        #expect(try await store.updateEnvironment(token: token(2), to: .development) == nil)

        // A send's correction is noted with the move, for that send alone; a token not stored notes nothing.
        let send = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
        let other = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
        _ = try await store.upsert(registration(3, environment: .development))
        #expect(try await store.updateEnvironment(token: token(3), to: .production, correctedBy: send.id) != nil)
        #expect(try await store.updateEnvironment(token: token(4), to: .production, correctedBy: send.id) == nil)
        #expect(try await store.tokensCorrected(by: send.id, among: [token(1), token(3), token(4)]) == [token(3)])
        #expect(try await store.tokensCorrected(by: other.id, among: [token(3)]).isEmpty)
        #expect(try await store.tokensCorrected(by: send.id, among: []).isEmpty)
        #expect(
            try await store.tokensCorrected(by: send.id, among: [token(4), token(1)]).isEmpty,
            "a correction between the tokens asked about, not among them")
        // Corrected back by the same send (a second BadDeviceToken): still one note.
        #expect(try await store.updateEnvironment(token: token(3), to: .development, correctedBy: send.id) != nil)
        #expect(try await store.tokensCorrected(by: send.id, among: [token(3)]) == [token(3)])
    }

    static func purge(_ context: Context) async throws {
        let store = context.store
        for n in 1...3 { _ = try await store.upsert(registration(n)) }
        _ = try await store.invalidate(token: token(1), reason: .unregistered, at: nil)
        context.clock.advance(by: .seconds(3_600))
        let cutoff = context.clock.now()
        _ = try await store.invalidate(token: token(2), reason: .expiredToken, at: nil)
        #expect(try await store.purgeInvalidated(before: cutoff) == 1)
        #expect(try await store.device(token(1)) == nil)
        #expect(try await store.device(token(2)) != nil)
        #expect(try await store.device(token(3)) != nil)
    }

    static func concurrentUpserts(_ context: Context) async throws {
        let store = context.store
        // First registrations of five tokens race each other, from two instances, each with its own tag.
        let results = try await context.withSecondInstance { other in
            try await withThrowingTaskGroup(of: UpsertResult.self) { group in
                for n in 1...5 {
                    for attempt in 0..<8 {
                        let instance = attempt.isMultiple(of: 2) ? store : other
                        group.addTask {
                            try await instance.upsert(registration(n, user: "u\(attempt)", tags: ["t\(attempt)"]))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(results.count == 40)
        #expect(results.contains { $0.change == .created })
        #expect(try await store.count(matching: .topic(topic)) == 5, "one record per token")
        var joined: [DeviceToken: [String]] = [:]
        for attempt in 0..<8 {
            for device in try await all(store, .tag("t\(attempt)")) { joined[device.token, default: []].append("t\(attempt)") }
        }
        for n in 1...5 {
            let stored = try #require(try await store.device(token(n)))
            #expect(joined[token(n)] == stored.tags, "the tag rows of token \(n) agree with its record")
        }
    }

    static func invalidRegistration(_ context: Context) async throws {
        let store = context.store
        var bad = registration(1)
        bad.topic = ""
        await #expect(throws: StoreError.self) { try await store.upsert(bad) }
        bad = registration(1, tags: (0...50).map { "tag\($0)" })
        let error = await #expect(throws: StoreError.self) { try await store.upsert(bad) }
        #expect(error?.code == .invalidRecord)
        #expect(error?.description.contains(token(1).redacted) == true)
        #expect(error?.description.contains(token(1).hex) == false, "errors never show a full token")
        #expect(try await store.count(matching: .topic(topic)) == 0)
    }
}

