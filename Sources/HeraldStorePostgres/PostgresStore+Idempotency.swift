import Foundation
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
}
