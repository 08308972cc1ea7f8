public import Foundation

/// The value of the `apns-id` header: a UUID naming one notification request.
///
/// APNs echoes it in every response. Keeping the same id across retries lets the receiving side (and the emulator's
/// duplicate counter) tell a resend from a new notification.
public struct APNSID: Sendable, Hashable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID = UUID()) { self.uuid = uuid }

    /// Parses the canonical 8-4-4-4-12 form in either case (APNs accepts uppercase too).
    public init?(headerValue: some StringProtocol) {
        guard let uuid = UUID(text: headerValue) else { return nil }
        self.uuid = uuid
    }

    /// The canonical lowercase form Apple documents.
    public var headerValue: String { uuid.lowercasedText }

    public var description: String { headerValue }
}

extension APNSID {
    /// A random version-4 UUID in the canonical lowercase form, drawn from `generator`: without Foundation's `UUID`
    /// and without a system call per id, for the sender and the emulator, which mint one per request.
    public static func randomHeaderValue(using generator: inout some RandomNumberGenerator) -> String {
        headerValue(high: generator.next(), low: generator.next())
    }

    /// The 8-4-4-4-12 form of the UUID whose bytes are `high` then `low` (big-endian), with the version (4) and
    /// variant (RFC 9562 §4.1) bits set.
    public static func headerValue(high: UInt64, low: UInt64) -> String {
        UUID.text(high: high & ~0xF000 | 0x4000, low: low & ~(0xC << 60) | (0x8 << 60))
    }
}
