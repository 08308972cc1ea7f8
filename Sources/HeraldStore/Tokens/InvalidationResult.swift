public import Foundation

/// What ``TokenStore/invalidate(token:reason:at:)`` did with a token APNs rejected.
public enum InvalidationResult: Sendable, Hashable {
    /// The token is out of every send until the app registers it again. It was active, or already invalidated.
    case removed
    /// The app registered the token after APNs's timestamp, so the rejection is older than the registration (an
    /// uninstall and reinstall raced an in-flight push): the token stays active. Carries the registration time.
    case keptBecauseReregistered(registeredAt: Date)
    /// The registry does not know the token.
    case notFound
}

extension InvalidationResult {
    /// The rule of apns-protocol.md §5.6 for a token that is stored: remove it unless the app registered it after
    /// APNs's timestamp. Without a timestamp (`ExpiredToken`, `BadDeviceToken`) the token is removed.
    ///
    /// Both times are compared as stored, to the microsecond; a registration at the very moment of the timestamp
    /// does not save the token.
    package static func decide(registeredAt: Date, apnsTimestamp: Date?) -> InvalidationResult {
        guard let apnsTimestamp else { return .removed }
        let registered = StoreTime.microseconds(registeredAt)
        return registered > StoreTime.microseconds(apnsTimestamp)
            ? .keptBecauseReregistered(registeredAt: registeredAt) : .removed
    }
}
