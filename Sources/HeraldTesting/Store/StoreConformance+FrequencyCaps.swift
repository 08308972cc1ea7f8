import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var frequencyCapCases: [Case] {
        [
            Case(
                "a frequency cap admits each person up to its count per window, in every cap at once; a send's own claim is free; a new window starts at zero",
                frequencyCapClaims),
            Case("two instances claiming caps for the same people at once never let a person past a cap", concurrentFrequencyCaps),
            Case("retention deletes ended cap windows, and the choices of tokens gone or invalidated before the cutoff", frequencyCapRetention),
        ]
    }

    static func frequencyCapClaims(_ context: Context) async throws {
        let store = context.store
        // Noon, so a day's window does not end during the case.
        context.clock.set(to: Date(timeIntervalSince1970: 20_000 * 86_400 + 43_200))
        let appWide = FrequencyCap(category: nil, limit: 2, periodSeconds: 86_400)
        let marketing = FrequencyCap(category: "marketing", limit: 1, periodSeconds: 86_400)
        let social = FrequencyCap(category: "social", limit: 1, periodSeconds: 86_400)
        // alice has two devices in the batch: one claim for both.
        let subjects = ["u:alice", "u:alice", "i:x", "t:y"]
        func claim(_ caps: [FrequencyCap], _ send: SendID, _ subjects: [String] = subjects, record: Bool = false)
            async throws -> FrequencyCapClaim
        {
            try await store.claimFrequencyCaps(
                caps, topic: topic, subjects: subjects, send: send, recordOnSend: record, at: context.clock.now())
        }
        let first = SendID()
        #expect(try await claim([appWide, marketing], first) == FrequencyCapClaim(allowed: Set(subjects), suppressed: 0))
        #expect(
            try await claim([appWide, marketing], first) == FrequencyCapClaim(allowed: Set(subjects), suppressed: 0),
            "the same send again (a resumed run, another shard) spends nothing more")

        // The marketing cap is used up: a second marketing send reaches nobody, and is counted on its row.
        let second = try await store.createSend(NewSend(target: "every device", summary: "alert push", topic: topic))
        #expect(try await claim([appWide, marketing], second.id, record: true) == FrequencyCapClaim(allowed: [], suppressed: 4))
        #expect(try await store.send(second.id)?.suppressed.frequencyCap == 4)
        // Another app's caps are its own.
        #expect(
            try await store.claimFrequencyCaps(
                [marketing], topic: "com.example.other", subjects: ["u:alice"], send: SendID(), recordOnSend: false,
                at: context.clock.now()).allowed == ["u:alice"])

        // A social send still fits the app-wide cap (2): its second notification of the day.
        #expect(try await claim([appWide, social], SendID(), ["u:alice"]).allowed == ["u:alice"])
        // The app-wide cap is used up; the denied claim spends nothing of the social cap of another send.
        #expect(try await claim([appWide], SendID(), ["u:alice", "i:x"]) == FrequencyCapClaim(allowed: ["i:x"], suppressed: 1))
        #expect(try await claim([social], SendID(), ["i:x"]).allowed == ["i:x"], "x's social cap was untouched")

        // What a dry run would estimate: the devices whose person used up a cap.
        _ = try await store.upsert(registration(1, user: "alice"))
        _ = try await store.upsert(registration(2, user: "bob"))
        let query = DeviceQuery.topic(topic)
        #expect(try await store.count(matching: query.exhaustingFrequencyCaps([marketing], at: context.clock.now())) == 1)
        #expect(try await store.count(matching: query.exhaustingFrequencyCaps([social], at: context.clock.now())) == 1)

        // The next day: a new window, counted from zero.
        context.clock.advance(by: .seconds(86_400))
        #expect(try await claim([appWide, marketing], SendID()) == FrequencyCapClaim(allowed: Set(subjects), suppressed: 0))
        #expect(try await store.count(matching: query.exhaustingFrequencyCaps([social], at: context.clock.now())) == 0)
    }

    static func concurrentFrequencyCaps(_ context: Context) async throws {
        let cap = FrequencyCap(category: nil, limit: 3, periodSeconds: 3_600)
        let subjects = (0..<40).map { "u:person\($0)" }
        let now = context.clock.now()
        let (first, second) = try await context.withSecondInstance { other in
            async let one = Self.claimRepeatedly(cap, subjects: subjects, sends: 6, on: context.store, at: now)
            async let two = Self.claimRepeatedly(cap, subjects: subjects.reversed(), sends: 6, on: other, at: now)
            return try await (one, two)
        }
        for subject in subjects {
            #expect(
                (first[subject] ?? 0) + (second[subject] ?? 0) == cap.limit,
                "12 sends to \(subject), 3 allowed across both instances")
        }
    }

    /// Claims `cap` for every subject once per send, one send after another; returns each subject's admissions.
    private static func claimRepeatedly(
        _ cap: FrequencyCap, subjects: [String], sends: Int, on store: any Store, at now: Date
    ) async throws -> [String: Int] {
        var allowed: [String: Int] = [:]
        for _ in 0..<sends {
            let claim = try await store.claimFrequencyCaps(
                [cap], topic: topic, subjects: subjects, send: SendID(), recordOnSend: false, at: now)
            for subject in claim.allowed { allowed[subject, default: 0] += 1 }
        }
        return allowed
    }

    static func frequencyCapRetention(_ context: Context) async throws {
        let store = context.store
        let hourly = FrequencyCap(category: nil, limit: 1, periodSeconds: 3_600)
        _ = try await store.claimFrequencyCaps(
            [hourly], topic: topic, subjects: ["u:a", "u:b"], send: SendID(), recordOnSend: false,
            at: context.clock.now())
        #expect(try await store.purgeFrequencyWindows(endedBefore: context.clock.now(), limit: 10) == 0)
        context.clock.advance(by: .seconds(3_600))
        #expect(try await store.purgeFrequencyWindows(endedBefore: context.clock.now(), limit: 1) == 1)
        #expect(try await store.purgeFrequencyWindows(endedBefore: context.clock.now(), limit: 10) == 1)

        // Tokens: 1 removed, 2 invalidated long ago, 3 invalidated lately, 4 active; and a person's choice.
        for n in 1...4 { _ = try await store.upsert(registration(n)) }
        let now = context.clock.now()
        for n in 1...4 {
            _ = try await store.updatePreferences(
                topic: topic, subject: .token(token(n)), choices: ["marketing": true], at: now)
        }
        _ = try await store.updatePreferences(topic: topic, subject: .user("alice"), choices: ["marketing": true], at: now)
        _ = try await store.remove(token(1))
        _ = try await store.invalidate(token: token(2), reason: .unregistered, at: nil)
        context.clock.advance(by: .seconds(86_400))
        let cutoff = context.clock.now()
        context.clock.advance(by: .seconds(60))
        _ = try await store.invalidate(token: token(3), reason: .unregistered, at: nil)

        // Token 2 and the choices of tokens 1 and 2, in batches of two.
        #expect(try await deleteAll(.invalidatedTokens, before: cutoff, limit: 2, on: store).deleted == 3)
        #expect(try await store.preferences(topic: topic, subject: .token(token(1))).choices.isEmpty)
        #expect(try await store.preferences(topic: topic, subject: .token(token(2))).choices.isEmpty)
        #expect(try await store.preferences(topic: topic, subject: .token(token(3))).choices == ["marketing": true])
        #expect(try await store.preferences(topic: topic, subject: .token(token(4))).choices == ["marketing": true])
        #expect(try await store.preferences(topic: topic, subject: .user("alice")).choices == ["marketing": true])
    }
}
