public import Foundation
public import HeraldStore

extension PostgresStore {
    public func claimIdempotencyKey(_ claim: IdempotencyClaim) async throws -> IdempotencyClaimResult {
        // The upsert takes the key or leaves the row as the first request left it; a row released between the two
        // statements is claimed on the next round.
        for _ in 0..<3 {
            let result = try await transaction("claim an idempotency key") { session -> IdempotencyClaimResult? in
                if try await !session.rows(StoreSQL.claimIdempotencyKey(claim, .postgres)).isEmpty { return .claimed }
                let row = try await session.rows(
                    StoreSQL.idempotencyKey(scope: claim.scope, key: claim.key, .postgres)
                ).first
                return try StoreSQL.claimResult(fingerprint: claim.fingerprint, row: row)
            }
            if let result { return result }
        }
        return .inProgress
    }

    public func completeIdempotencyKey(
        scope: String, key: String, fingerprint: String, response: IdempotentResponse
    ) async throws {
        try await transaction("record an idempotent answer") { session in
            try await session.execute(
                StoreSQL.completeIdempotencyKey(
                    scope: scope, key: key, fingerprint: fingerprint, response: response, .postgres))
        }
    }

    public func releaseIdempotencyKey(scope: String, key: String, fingerprint: String) async throws {
        try await session("release an idempotency key") { session in
            try await session.execute(
                StoreSQL.releaseIdempotencyKey(scope: scope, key: key, fingerprint: fingerprint, .postgres))
        }
    }

    public func purgeIdempotencyKeys(expiredBefore date: Date, limit: Int) async throws -> Int {
        try await session("delete expired idempotency keys") { session in
            try await session.rows(StoreSQL.purgeIdempotencyKeys(expiredBefore: date, limit: limit, .postgres)).count
        }
    }
}
