import Foundation
import Synchronization

/// One provider token per signing key for the whole process, refreshed on APNs' schedule.
///
/// APNs rejects tokens older than an hour (`ExpiredProviderToken`) and connections whose token changes more often
/// than every 20 minutes (`TooManyProviderTokenUpdates`). The cache reuses a token for ``Configuration/refreshAfter``
/// (50 minutes by default) and never mints a new one within ``Configuration/minimumInterval`` (20 minutes) of the
/// last, even when asked to after a rejection. Concurrent callers share one signature: signing happens under a
/// lock, and every caller waiting on it gets the token it produced.
public final class ProviderTokenCache: Sendable {
    public struct Configuration: Sendable {
        /// How long a token is reused. Default 50 minutes, safely inside APNs' one hour.
        public var refreshAfter: Duration
        /// The shortest time between two signings. Default 20 minutes, APNs' per-connection limit.
        public var minimumInterval: Duration

        public init(refreshAfter: Duration = .seconds(50 * 60), minimumInterval: Duration = .seconds(20 * 60)) {
            precondition(refreshAfter >= minimumInterval, "refreshAfter must not be shorter than minimumInterval")
            precondition(refreshAfter < .seconds(3600), "refreshAfter must be under APNs' one-hour token lifetime")
            self.refreshAfter = refreshAfter
            self.minimumInterval = minimumInterval
        }
    }

    private struct State {
        var current: ProviderToken?
        var signatures = 0
    }

    /// The key this cache signs with.
    public let key: ProviderSigningKey
    private let clock: any WallClock
    private let refreshAfter: TimeInterval
    private let minimumInterval: TimeInterval
    private let state = Mutex(State())

    public init(key: ProviderSigningKey, configuration: Configuration = Configuration(), clock: any WallClock = SystemWallClock()) {
        self.key = key
        self.clock = clock
        self.refreshAfter = Self.seconds(configuration.refreshAfter)
        self.minimumInterval = Self.seconds(configuration.minimumInterval)
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The token to send now: the cached one while it is younger than the refresh age, else a newly signed one.
    public func currentToken() -> ProviderToken {
        let now = clock.now()
        return state.withLock { state in
            if let current = state.current {
                let age = now.timeIntervalSince(current.issuedAt)
                // A clock that stepped backwards (age < 0) keeps the token rather than minting a burst of new ones.
                if age < refreshAfter { return current }
            }
            return sign(at: now, into: &state)
        }
    }

    /// A replacement after APNs rejected `rejected` with `ExpiredProviderToken`.
    ///
    /// Mints a new token only if `rejected` is still the current one and at least the minimum interval old;
    /// otherwise returns the current token (another caller already refreshed, or refreshing now would trip
    /// `TooManyProviderTokenUpdates`).
    public func refreshedToken(replacing rejected: ProviderToken) -> ProviderToken {
        let now = clock.now()
        return state.withLock { state in
            guard let current = state.current else { return sign(at: now, into: &state) }
            guard current == rejected, now.timeIntervalSince(current.issuedAt) >= minimumInterval else {
                return current
            }
            return sign(at: now, into: &state)
        }
    }

    /// Adopts a token signed elsewhere (another server instance sharing it through the database) if it is newer
    /// than the cached one and was signed with this cache's key.
    public func adopt(_ token: ProviderToken) {
        guard token.keyID == key.keyID, token.teamID == key.teamID,
            state.withLock({ $0.current.map { token.issuedAt > $0.issuedAt } ?? true })
        else { return }
        // The same key id does not prove the same key: a key file replaced under its old id, or the per-process key
        // of an in-process emulator after a restart. Adopting such a token would fail every request with
        // InvalidProviderToken, so its signature (and age) is checked against this key first.
        guard (try? ProviderTokenVerifier(trustedKeys: [.init(key)]).verify(jwt: token.jwt, now: clock.now())) != nil else { return }
        state.withLock { state in
            if state.current.map({ token.issuedAt > $0.issuedAt }) ?? true { state.current = token }
        }
    }

    /// How many tokens this cache has signed, for metrics and tests.
    public var signatureCount: Int { state.withLock { $0.signatures } }

    private func sign(at now: Date, into state: inout State) -> ProviderToken {
        let token = key.signToken(issuedAt: now)
        state.current = token
        state.signatures += 1
        return token
    }
}
