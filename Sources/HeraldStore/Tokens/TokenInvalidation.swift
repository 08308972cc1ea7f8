public import Foundation
public import HeraldCore

/// Why and when a token stopped receiving pushes: what the store keeps after APNs said the token is dead.
///
/// An invalidated token stays in the registry, out of every send, until the app registers it again (which clears
/// this) or ``TokenStore/purgeInvalidated(before:)`` deletes it. Keeping it lets an administrator see why a device
/// stopped getting pushes.
public struct TokenInvalidation: Sendable, Hashable {
    /// The APNs reason: `Unregistered`, `ExpiredToken`, or `BadDeviceToken` after the other environment failed too.
    public var reason: APNSReason
    /// When the store recorded it.
    public var recordedAt: Date
    /// The `timestamp` of APNs's 410 answer: the last moment APNs confirmed the token was invalid. `nil` when APNs
    /// gave none.
    public var apnsTimestamp: Date?
}
