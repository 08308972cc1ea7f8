import Foundation
public import HeraldStore

extension SQLiteStore {
    public func claimIdempotencyKey(_ claim: IdempotencyClaim) async throws -> IdempotencyClaimResult {
        // One write transaction: SQLite's single writer makes the claim and the read of what it found one step.
        try await write("claim an idempotency key") { db in
            if try !db.rows(StoreSQL.claimIdempotencyKey(claim, .sqlite)).isEmpty { return .claimed }
            let row = try db.rows(StoreSQL.idempotencyKey(scope: claim.scope, key: claim.key, .sqlite)).first
            return try StoreSQL.claimResult(fingerprint: claim.fingerprint, row: row) ?? .inProgress
        }
    }
}
