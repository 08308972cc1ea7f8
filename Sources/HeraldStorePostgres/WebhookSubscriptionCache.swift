import Foundation
import HeraldStore
import Synchronization

/// Which webhook event types some endpoint subscribes to, as this store last read them: lets a write whose events no
/// endpoint wants (an inline send, when there are no endpoints for its events) skip the read of the endpoints, one
/// round trip of its three.
///
/// A change made through this store forgets what was read, so this instance sees it at once. A change made through
/// another instance is seen once what was read is older than ``maximumAge``: an endpoint created there gets this
/// instance's events from at most that long after its creation (docs/integrations.md). Only the answer "nobody wants
/// these" is taken from here; a write whose events some endpoint wants reads the endpoints in its transaction.
final class WebhookSubscriptionCache: Sendable {
    /// How long a read is trusted.
    static let maximumAge: TimeInterval = 1

    private struct State {
        var cached: (types: Set<WebhookEventType>, readAt: Date)?
        /// Counts the changes: a read that started before a change keeps nothing.
        var generation = 0
    }

    /// A read of the endpoints under way.
    struct Read {
        fileprivate let at: Date
        fileprivate let generation: Int
    }

    private let state = Mutex(State())

    /// Whether no endpoint wants any of `types`, by a read at most ``maximumAge`` old; `nil` when there is none.
    func noneWants(_ types: Set<WebhookEventType>, at now: Date) -> Bool? {
        state.withLock { state in
            guard let cached = state.cached, now.timeIntervalSince(cached.readAt) <= Self.maximumAge,
                now >= cached.readAt
            else { return nil }
            return cached.types.isDisjoint(with: types)
        }
    }

    /// Notes that a read of the endpoints (``WebhookOutbox/selectSubscriptions(_:)``) starts.
    func startRead(at date: Date) -> Read {
        Read(at: date, generation: state.withLock { $0.generation })
    }

    /// Keeps what a read found, unless an endpoint changed through this store since it started.
    func remember(_ types: Set<WebhookEventType>, from read: Read) {
        state.withLock { state in
            guard state.generation == read.generation else { return }
            state.cached = (types, read.at)
        }
    }

    /// Forgets what was read: an endpoint changed.
    func forget() {
        state.withLock { state in
            state.cached = nil
            state.generation += 1
        }
    }
}
