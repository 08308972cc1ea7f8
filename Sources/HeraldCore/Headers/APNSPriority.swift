/// The value of the `apns-priority` header.
public enum APNSPriority: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Deliver immediately (the default when the header is absent).
    case immediate = 10
    /// Deliver when it suits the device's power state; required for background pushes.
    case considerPower = 5
    /// Put the device's power first and never wake it.
    case prioritizePowerOver = 1

    /// Parses a header value: `10`, `5` or `1`.
    public init?(headerValue: some StringProtocol) {
        guard let number = Int(headerValue), let priority = APNSPriority(rawValue: number) else { return nil }
        self = priority
    }

    /// What APNs assumes when the header is absent.
    public static let `default` = APNSPriority.immediate

    public var description: String { String(rawValue) }
}
