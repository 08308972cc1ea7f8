public import Foundation

/// The value of the `apns-expiration` header: until when APNs keeps trying to deliver.
///
/// The header is an absolute UNIX time in seconds, not a duration: `300` means five minutes past midnight on
/// 1 January 1970, which is already over. ``after(_:from:)`` builds the common "for the next hour" case.
public struct APNSExpiration: Sendable, Hashable, CustomStringConvertible {
    /// Seconds since 1970; 0 means deliver once, without storing.
    public let secondsSince1970: Int

    /// APNs tries once and does not store the notification.
    public static let immediately = APNSExpiration(secondsSince1970: 0)

    /// Keep trying until the given moment.
    public static func at(_ date: Date) -> APNSExpiration {
        APNSExpiration(secondsSince1970: max(1, Int(date.timeIntervalSince1970.rounded(.down))))
    }

    /// Keep trying for a while from now.
    public static func after(_ duration: Duration, from now: Date = Date()) -> APNSExpiration {
        .at(now.addingTimeInterval(Double(duration.components.seconds)))
    }

    /// Wraps a raw header value.
    /// - Precondition: `secondsSince1970` is not negative.
    public init(secondsSince1970: Int) {
        precondition(secondsSince1970 >= 0, "apns-expiration cannot be negative")
        self.secondsSince1970 = secondsSince1970
    }

    /// Parses a header value: a non-negative decimal integer.
    public init?(headerValue: some StringProtocol) {
        guard !headerValue.isEmpty, headerValue.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let seconds = Int(headerValue)
        else { return nil }
        self.secondsSince1970 = seconds
    }

    /// Whether this is "deliver once" (`0`).
    public var isImmediate: Bool { secondsSince1970 == 0 }

    /// The expiry as a date, or `nil` for ``immediately``.
    public var date: Date? { isImmediate ? nil : Date(timeIntervalSince1970: Double(secondsSince1970)) }

    /// Whether a stored notification with this expiration is past it at `now`.
    public func hasPassed(at now: Date) -> Bool { !isImmediate && Double(secondsSince1970) < now.timeIntervalSince1970 }

    public var description: String { String(secondsSince1970) }
}
