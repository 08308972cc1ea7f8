import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var idempotencyCases: [Case] {
        [
            Case(
                "an idempotency key is claimed once; its answer is replayed to the same request, refused to another, and kept per scope",
                idempotencyReplay),
            Case(
                "an idempotency key is free again once released, expired, or claimed by a request that never completed",
                idempotencyRelease),
            Case(
                "two instances claiming one idempotency key at once: exactly one gets it",
                idempotencyRace),
        ]
    }

    private static func claim(
        _ context: Context, scope: String = "key-a", key: String = "order-1", fingerprint: String = "f1"
    ) -> IdempotencyClaim {
        let now = context.clock.now()
        return IdempotencyClaim(
            scope: scope, key: key, fingerprint: fingerprint, at: now, expiresAt: now.addingTimeInterval(86_400),
            staleBefore: now.addingTimeInterval(-600))
    }

    static func idempotencyReplay(_ context: Context) async throws {
        let store = context.store
        #expect(try await store.claimIdempotencyKey(claim(context)) == .claimed)
        #expect(try await store.claimIdempotencyKey(claim(context)) == .inProgress, "the first request still runs")
        #expect(try await store.claimIdempotencyKey(claim(context, fingerprint: "f2")) == .mismatch)
        // Another API key may use the same key for its own request.
        #expect(try await store.claimIdempotencyKey(claim(context, scope: "key-b", fingerprint: "f2")) == .claimed)

        let answer = IdempotentResponse(status: 202, body: #"{"id": "s1"}"#, location: "/api/sends/s1")
        try await store.completeIdempotencyKey(scope: "key-a", key: "order-1", fingerprint: "f1", response: answer)
        context.clock.advance(by: .seconds(3_600))
        #expect(try await store.claimIdempotencyKey(claim(context)) == .completed(answer))
        #expect(try await store.claimIdempotencyKey(claim(context, fingerprint: "f2")) == .mismatch)
        // A completed answer is not released by a late failure of a duplicate.
        try await store.releaseIdempotencyKey(scope: "key-a", key: "order-1", fingerprint: "f1")
        #expect(try await store.claimIdempotencyKey(claim(context)) == .completed(answer))
        let inline = IdempotentResponse(status: 200, body: "{}", location: nil)
        try await store.completeIdempotencyKey(scope: "key-b", key: "order-1", fingerprint: "f2", response: inline)
        #expect(try await store.claimIdempotencyKey(claim(context, scope: "key-b", fingerprint: "f2")) == .completed(inline))
    }

    static func idempotencyRelease(_ context: Context) async throws {
        let store = context.store
        #expect(try await store.claimIdempotencyKey(claim(context)) == .claimed)
        try await store.releaseIdempotencyKey(scope: "key-a", key: "order-1", fingerprint: "other")
        #expect(try await store.claimIdempotencyKey(claim(context)) == .inProgress, "another fingerprint releases nothing")
        try await store.releaseIdempotencyKey(scope: "key-a", key: "order-1", fingerprint: "f1")
        #expect(try await store.claimIdempotencyKey(claim(context, fingerprint: "f2")) == .claimed, "released: free")

        // A claim whose process died is taken once it is older than the caller's staleness bound.
        context.clock.advance(by: .seconds(300))
        #expect(try await store.claimIdempotencyKey(claim(context, fingerprint: "f3")) == .mismatch)
        context.clock.advance(by: .seconds(301))
        #expect(try await store.claimIdempotencyKey(claim(context, fingerprint: "f3")) == .claimed)

        // An answer is kept until it expires; then the key runs afresh, and the expired keys are purged.
        let answer = IdempotentResponse(status: 200, body: "{}", location: nil)
        try await store.completeIdempotencyKey(scope: "key-a", key: "order-1", fingerprint: "f3", response: answer)
        for n in 1...3 { #expect(try await store.claimIdempotencyKey(claim(context, key: "old-\(n)")) == .claimed) }
        context.clock.advance(by: .seconds(86_400))
        #expect(try await store.purgeIdempotencyKeys(expiredBefore: context.clock.now(), limit: 2) == 2)
        #expect(try await store.purgeIdempotencyKeys(expiredBefore: context.clock.now(), limit: 10) == 2)
        #expect(try await store.claimIdempotencyKey(claim(context, fingerprint: "f4")) == .claimed)
        #expect(try await store.purgeIdempotencyKeys(expiredBefore: context.clock.now(), limit: 10) == 0)
    }

    static func idempotencyRace(_ context: Context) async throws {
        try await context.withSecondInstance { second in
            let stores = [context.store, second]
            let results = try await withThrowingTaskGroup(of: IdempotencyClaimResult.self) { group in
                for n in 0..<8 {
                    let store = stores[n % 2]
                    let request = claim(context)
                    group.addTask { try await store.claimIdempotencyKey(request) }
                }
                var results: [IdempotencyClaimResult] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(results.count { $0 == .claimed } == 1, "\(results)")
            #expect(results.count { $0 == .inProgress } == 7, "\(results)")
        }
    }
}
