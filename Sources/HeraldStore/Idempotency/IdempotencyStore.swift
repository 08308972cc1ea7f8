public import Foundation

/// The answers of requests that carried an `Idempotency-Key`, so a client that retries one gets the first answer
/// instead of a second send.
///
/// A key belongs to a scope (the API key that used it) and is claimed by the first request that presents it; the
/// request's fingerprint (its method, path and body, hashed) decides whether a later request is the same one. A
/// claim that is never completed (the process died during the request) is taken over once it is older than the
/// caller's `staleBefore`. Methods throw ``StoreError``.
public protocol IdempotencyStore: Sendable {
    /// Claims a key for a request, or says what became of the request that claimed it first.
    /// - Returns: ``IdempotencyClaimResult/claimed`` when the key was free, expired, or claimed by a request that
    ///   never completed before `claim.staleBefore`; otherwise what the first request left.
    func claimIdempotencyKey(_ claim: IdempotencyClaim) async throws -> IdempotencyClaimResult

    /// Records the answer of the request that claimed a key: later requests with the same key and fingerprint get it.
    func completeIdempotencyKey(
        scope: String, key: String, fingerprint: String, response: IdempotentResponse) async throws

    /// Gives up a claim whose request failed (nothing was done, or what was done must be asked again), so a retry
    /// runs afresh. Only a claim not completed, with this fingerprint, is released.
    func releaseIdempotencyKey(scope: String, key: String, fingerprint: String) async throws

    /// Deletes the keys that expired before `date`, at most `limit` of them.
    /// - Returns: How many were deleted.
    func purgeIdempotencyKeys(expiredBefore date: Date, limit: Int) async throws -> Int
}

/// A request's claim of an idempotency key.
public struct IdempotencyClaim: Sendable, Hashable {
    /// Whose key it is: the API key's id. Two API keys may use the same key for different requests.
    public var scope: String
    /// The client's `Idempotency-Key`.
    public var key: String
    /// The request's method, path and body, hashed: what makes a later request the same one.
    public var fingerprint: String
    /// Now.
    public var at: Date
    /// Until when the answer is kept: a request with the key after that runs afresh.
    public var expiresAt: Date
    /// A claim not completed by then was abandoned (its process died) and may be taken.
    public var staleBefore: Date

    /// - Parameters: see the properties.
    public init(scope: String, key: String, fingerprint: String, at: Date, expiresAt: Date, staleBefore: Date) {
        self.scope = scope
        self.key = key
        self.fingerprint = fingerprint
        self.at = at
        self.expiresAt = expiresAt
        self.staleBefore = staleBefore
    }
}

/// What a claim of an idempotency key found.
public enum IdempotencyClaimResult: Sendable, Hashable {
    /// The key is this request's now: perform it, then complete or release the key.
    case claimed
    /// The same request completed before: answer what it answered.
    case completed(IdempotentResponse)
    /// Another request with the same key is still running.
    case inProgress
    /// The key was used for a different request (another method, path or body).
    case mismatch
}

/// The answer a request with an idempotency key gave, kept for its retries.
public struct IdempotentResponse: Sendable, Hashable {
    /// The HTTP status.
    public var status: Int
    /// The body (JSON).
    public var body: String
    /// The `Location` header, when there was one (a queued send's URL).
    public var location: String?

    /// - Parameters: see the properties.
    public init(status: Int, body: String, location: String?) {
        self.status = status
        self.body = body
        self.location = location
    }
}
