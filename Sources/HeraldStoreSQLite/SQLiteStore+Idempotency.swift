public import Foundation
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

    public func completeIdempotencyKey(
        scope: String, key: String, fingerprint: String, response: IdempotentResponse
    ) async throws {
        try await write("record an idempotent answer") { db in
            try db.execute(
                StoreSQL.completeIdempotencyKey(
                    scope: scope, key: key, fingerprint: fingerprint, response: response, .sqlite))
        }
    }

    public func releaseIdempotencyKey(scope: String, key: String, fingerprint: String) async throws {
        try await write("release an idempotency key") { db in
            try db.execute(StoreSQL.releaseIdempotencyKey(scope: scope, key: key, fingerprint: fingerprint, .sqlite))
        }
    }

    public func purgeIdempotencyKeys(expiredBefore date: Date, limit: Int) async throws -> Int {
        try await write("delete expired idempotency keys") { db in
            try db.rows(StoreSQL.purgeIdempotencyKeys(expiredBefore: date, limit: limit, .sqlite)).count
        }
    }
}
