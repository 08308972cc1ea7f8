import HeraldCore
package import Foundation

extension StatementStore {
    public func completeIdempotencyKey(
        scope: String, key: String, fingerprint: String, response: IdempotentResponse
    ) async throws {
        let statement = StoreSQL.completeIdempotencyKey(
            scope: scope, key: key, fingerprint: fingerprint, response: response, dialect)
        _ = try await writeRows("record an idempotent answer", statement)
    }

    public func releaseIdempotencyKey(scope: String, key: String, fingerprint: String) async throws {
        let statement = StoreSQL.releaseIdempotencyKey(scope: scope, key: key, fingerprint: fingerprint, dialect)
        _ = try await writeRows("release an idempotency key", statement)
    }

    public func purgeIdempotencyKeys(expiredBefore date: Date, limit: Int) async throws -> Int {
        let statement = StoreSQL.purgeIdempotencyKeys(expiredBefore: date, limit: limit, dialect)
        return try await writeRows("delete expired idempotency keys", statement).count
    }
}
