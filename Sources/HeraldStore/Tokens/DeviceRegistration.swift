public import Foundation
import HeraldCore

/// One stored token: what the app last reported, when, and whether APNs has invalidated it since.
///
/// The reported fields live in ``registration`` and read as the record's own: `device.token`, `device.topic`,
/// `device.environment`, `device.tags`, …
@dynamicMemberLookup
public struct DeviceRegistration: Sendable, Hashable, CustomStringConvertible {
    /// What the app last reported, as stored (duplicate tags dropped).
    public var registration: TokenRegistration
    /// When the app last registered the token: what a 410's timestamp is compared with (apns-protocol.md §5.6).
    public var registeredAt: Date
    /// When the token was first stored.
    public var createdAt: Date
    /// When the record last changed: a registration, an environment correction or an invalidation.
    public var updatedAt: Date
    /// Set when APNs said the token is dead; such a token receives no pushes until it is registered again.
    public var invalidation: TokenInvalidation?
    /// For a push-to-start token: since when it counts as stale, its pushes having started nothing several times in a
    /// row; such a token receives no pushes until the app registers a new one (docs/live-activities.md).
    public var staleSince: Date?

    public init(
        registration: TokenRegistration, registeredAt: Date, createdAt: Date, updatedAt: Date,
        invalidation: TokenInvalidation? = nil, staleSince: Date? = nil
    ) {
        self.registration = registration
        self.registeredAt = registeredAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.invalidation = invalidation
        self.staleSince = staleSince
    }

    /// The reported fields, read and written as the record's own.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<TokenRegistration, Value>) -> Value {
        get { registration[keyPath: keyPath] }
        set { registration[keyPath: keyPath] = newValue }
    }

    /// Whether the token receives pushes: neither invalidated nor stale.
    public var isActive: Bool { invalidation == nil && staleSince == nil }

    /// Safe to log: the token is redacted.
    public var description: String {
        let state = invalidation != nil ? ", invalidated" : staleSince != nil ? ", stale" : ""
        return "DeviceRegistration(\(registration.token.redacted), \(registration.topic), \(registration.environment), "
            + "\(registration.tokenKind)\(state))"
    }
}
