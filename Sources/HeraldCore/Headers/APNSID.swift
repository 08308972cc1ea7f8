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
        guard headerValue.utf8.count == 36, let uuid = UUID(uuidString: String(headerValue)) else { return nil }
        self.uuid = uuid
    }

    /// The canonical lowercase form Apple documents.
    public var headerValue: String { uuid.uuidString.lowercased() }

    public var description: String { headerValue }
}
