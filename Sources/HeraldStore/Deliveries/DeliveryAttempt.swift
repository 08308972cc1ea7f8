public import Foundation
public import HeraldCore

/// One attempt at sending a notification to a device, as the delivery trace shows it (docs/delivery-trace.md).
///
/// Kept only for notifications that needed more than one attempt (retries, an environment correction): a
/// notification whose first attempt decided has none, and its trace is read from its outcome row. So a fan-out whose
/// notifications are accepted at once writes no attempt rows.
public struct DeliveryAttempt: Sendable, Hashable {
    /// 1 for the first attempt, counted across both environments when the token's environment was corrected.
    public var number: Int
    /// When its answer came (or its failure was known), by the server's wall clock.
    public var at: Date
    /// The host it went to.
    public var environment: APNSEnvironment
    /// The client's number of the HTTP/2 connection it went out on; `nil` when none was free or none could open.
    public var connection: Int?
    /// APNs's HTTP status; `nil` when no answer came.
    public var status: Int?
    /// APNs's reason, or the client's error code when no answer came.
    public var reason: String?
    /// What went wrong, safe to show; `nil` when APNs answered.
    public var message: String?
    /// The sandbox's `apns-unique-id` of this attempt (development only).
    public var apnsUniqueID: String?
    /// How long the sender waited before the next attempt, when there was one.
    public var retryAfter: Duration?

    public init(
        number: Int, at: Date, environment: APNSEnvironment, connection: Int? = nil, status: Int? = nil,
        reason: String? = nil, message: String? = nil, apnsUniqueID: String? = nil, retryAfter: Duration? = nil
    ) {
        self.number = number
        self.at = at
        self.environment = environment
        self.connection = connection
        self.status = status
        self.reason = reason
        self.message = message
        self.apnsUniqueID = apnsUniqueID
        self.retryAfter = retryAfter
    }

    /// Whether APNs took the notification on this attempt.
    public var isAccepted: Bool { status == 200 }
}
