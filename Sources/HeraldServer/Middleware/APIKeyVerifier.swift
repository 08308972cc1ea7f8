import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import Synchronization

/// Finds the API key a secret belongs to, remembering keys it verified for a few seconds.
///
/// Every API request carries its key: checking it in the store (a read and an HMAC) on each one is the largest cost
/// of a one-device send. A verified secret is remembered by its SHA-256 for ``lifetime``, so a key revoked with
/// `herald keys revoke` or by another instance stops working within that time; a revocation through this server
/// calls ``forget(_:)`` and takes effect at once. Only keys that verified are remembered, so unknown secrets cannot
/// fill the memory, and there are at most ``capacity`` of them. An expired key is returned, never remembered: the
/// caller refuses it with its own reason. A key's use is recorded at most once a ``lastUseResolution``.
final class APIKeyVerifier: Sendable {
    /// How long a verified key is trusted without asking the store again.
    static let lifetime: TimeInterval = 5
    /// The most keys remembered; when full, the oldest are dropped.
    static let capacity = 1_000
    /// How precisely a key's last use is recorded: a busy key writes once a minute, not on every request.
    static let lastUseResolution: TimeInterval = 60

    private struct Entry {
        let key: APIKey
        let until: Date
    }

    private let store: any APIKeyStore
    private let clock: any WallClock
    private let verified = Mutex<[SHA256Digest: Entry]>([:])
    /// When this process last recorded each key's use: many requests that find the key at once (a burst on a new
    /// key) write it once, not each, which would queue them all on the key's row.
    private let recordedUse = Mutex<[UUID: Date]>([:])
    /// Where an expired key's first refusal is recorded (`key.expired`); `nil` records nothing.
    private let audit: AuditTrail?
    /// Expired keys whose refusal this process recorded, or found recorded.
    private let recordedExpiry = Mutex<Set<UUID>>([])
    /// The console's sessions, whose cookie authenticates an API call without `Authorization` (the console's
    /// scripts); `nil` accepts no cookie.
    let consoleSessions: ConsoleAuthority?

    init(
        store: any APIKeyStore, clock: any WallClock, audit: AuditTrail? = nil, consoleSessions: ConsoleAuthority? = nil
    ) {
        self.store = store
        self.clock = clock
        self.audit = audit
        self.consoleSessions = consoleSessions
    }

    /// The active key with this secret, expired or not, or `nil`.
    func key(forSecret secret: String) async throws -> APIKey? {
        let digest = SHA256.hash(data: Array(secret.utf8))
        let now = clock.now()
        if let entry = verified.withLock({ $0[digest] }), entry.until > now, !entry.key.isExpired(at: now) {
            return entry.key
        }
        let found = try await store.apiKey(forSecret: secret)
        guard let key = found, !key.isExpired(at: now) else {
            verified.withLock { _ = $0.removeValue(forKey: digest) }
            return found
        }
        let due = key.lastUsedAt.map { now.timeIntervalSince($0) >= Self.lastUseResolution } ?? true
        let mine = due && recordedUse.withLock { recorded in
            if let last = recorded[key.id], now.timeIntervalSince(last) < Self.lastUseResolution { return false }
            if recorded.count >= Self.capacity { recorded.removeAll() }
            recorded[key.id] = now
            return true
        }
        if mine {
            // When a key was last used is for people deciding whether to revoke it: a failed write of it must not
            // fail the request it authenticated.
            _ = try? await store.recordAPIKeyUse(key.id, at: now, resolution: Self.lastUseResolution)
        }
        verified.withLock { verified in
            if verified.count >= Self.capacity {
                verified = verified.filter { $0.value.until > now }
                if verified.count >= Self.capacity { verified.removeAll() }
            }
            verified[digest] = Entry(key: key, until: now.addingTimeInterval(Self.lifetime))
        }
        return key
    }

    /// Records in the audit log, once, that an expired key was refused (`key.expired`, docs/security.md): the key
    /// is its actor and the refused client its address. The first refusal this process sees writes it unless the
    /// log already has one (another instance's, or from before a restart); later ones cost nothing.
    func recordExpiry(of key: APIKey, _ context: ServerRequestContext) async {
        guard let audit, recordedExpiry.withLock({ recorded in
            if recorded.count >= Self.capacity { recorded.removeAll() }
            return recorded.insert(key.id).inserted
        }) else { return }
        do {
            let query = AuditQuery(keyID: key.id, action: .keyExpired)
            guard try await audit.store.auditEntries(query, after: nil, limit: 1).entries.isEmpty else { return }
        } catch {
            // Asked again at its next refusal, rather than recorded twice.
            recordedExpiry.withLock { _ = $0.remove(key.id) }
            return
        }
        let expiry = key.expiresAt.map { " at \(RFC3339.string($0))" } ?? ""
        await audit.record(
            AuditEntry(
                at: clock.now(), actor: AuditActor(kind: .apiKey, keyID: key.id, name: key.name),
                address: AuditTrail.address(context), action: .keyExpired,
                app: key.apps.count == 1 ? key.apps.first : nil, subject: key.id.lowercasedText,
                detail: "\(key.name) (\(key.prefix)…) expired\(expiry); refused from then on"),
            logger: context.logger)
    }

    /// The time keys' expiry is judged by.
    func now() -> Date { clock.now() }

    /// Stops trusting a key at once (it was revoked here).
    func forget(_ id: UUID) {
        verified.withLock { verified in verified = verified.filter { $0.value.key.id != id } }
    }
}
