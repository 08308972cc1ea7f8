package import Foundation

extension StoreSQL {
    /// Takes a key that is free, expired, or claimed and abandoned before `staleBefore`; returns a row when it did.
    package static func claimIdempotencyKey(_ claim: IdempotencyClaim, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO idempotency_keys (scope, key, fingerprint, state, created_at, expires_at) \
            VALUES ($1, $2, $3, 'pending', $4, $5) \
            ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = 'pending', \
            created_at = excluded.created_at, expires_at = excluded.expires_at, response_status = NULL, \
            response_body = NULL, response_location = NULL \
            WHERE idempotency_keys.expires_at <= $4 \
            OR (idempotency_keys.state = 'pending' AND idempotency_keys.created_at < $6) \
            RETURNING scope
            """,
            [
                .text(claim.scope), .text(claim.key), .text(claim.fingerprint),
                .integer(StoreTime.microseconds(claim.at)), .integer(StoreTime.microseconds(claim.expiresAt)),
                .integer(StoreTime.microseconds(claim.staleBefore)),
            ])
    }

    /// The key's row as the first request left it: fingerprint, state, status, body, location.
    package static func idempotencyKey(scope: String, key: String, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT fingerprint, state, response_status, response_body, response_location FROM idempotency_keys \
            WHERE scope = $1 AND key = $2
            """,
            [.text(scope), .text(key)])
    }

    package static func completeIdempotencyKey(
        scope: String, key: String, fingerprint: String, response: IdempotentResponse, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE idempotency_keys SET state = 'done', response_status = $4, response_body = $5, \
            response_location = $6 WHERE scope = $1 AND key = $2 AND fingerprint = $3
            """,
            [
                .text(scope), .text(key), .text(fingerprint), .integer(Int64(response.status)),
                .text(response.body), response.location.map(SQLStatement.Value.text) ?? .null,
            ])
    }

    package static func releaseIdempotencyKey(
        scope: String, key: String, fingerprint: String, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            "DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND fingerprint = $3 AND state = 'pending'",
            [.text(scope), .text(key), .text(fingerprint)])
    }

    /// Deletes up to `limit` expired keys, oldest first; returns a row per key deleted.
    package static func purgeIdempotencyKeys(expiredBefore date: Date, limit: Int, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            DELETE FROM idempotency_keys WHERE (scope, key) IN (SELECT scope, key FROM idempotency_keys \
            WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2) RETURNING scope
            """,
            [.integer(StoreTime.microseconds(date)), .integer(Int64(limit))])
    }

    /// What a claim that took nothing found, from the row ``idempotencyKey(scope:key:_:)`` read; `nil` when there is
    /// no row (it was released meanwhile: claim again).
    package static func claimResult(fingerprint: String, row: (any StoredRow)?) throws -> IdempotencyClaimResult? {
        guard let row else { return nil }
        guard try row.text(0) == fingerprint else { return .mismatch }
        guard try row.text(1) == "done", let status = try row.optionalInteger(2), let body = try row.optionalText(3)
        else { return .inProgress }
        return .completed(IdempotentResponse(status: Int(status), body: body, location: try row.optionalText(4)))
    }
}
