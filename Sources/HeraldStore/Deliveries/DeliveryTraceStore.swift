public import Foundation
public import HeraldCore

/// What the store keeps about one notification to one device, for its delivery trace (docs/delivery-trace.md).
public protocol DeliveryTraceStore: Sendable {
    /// The device's outcome in a send, with its attempts when there was more than one, and the receipt events the
    /// device reported for it.
    /// - Returns: an empty trace (no outcome, no events) when the send has none for the device, or is unknown.
    func deliveryTrace(of id: SendID, to token: DeviceToken) async throws -> StoredDeliveryTrace
}

/// The stored pieces of one notification's trace.
public struct StoredDeliveryTrace: Sendable, Hashable {
    /// The device's outcome, with ``DeliveryOutcome/attempts`` read back; `nil` when none is recorded (yet).
    public var outcome: DeliveryOutcome?
    /// What the device reported, in the order it happened.
    public var receipts: [TracedReceipt]
    /// For a Live Activity's start send: whether it started the activity on the device; `nil` for other sends.
    public var activityStart: ActivityStartOutcome?

    public init(outcome: DeliveryOutcome? = nil, receipts: [TracedReceipt] = [], activityStart: ActivityStartOutcome? = nil) {
        self.outcome = outcome
        self.receipts = receipts
        self.activityStart = activityStart
    }
}

/// What a push-to-start did on a device, as the check found (``PushToStartCheckStore``).
public enum ActivityStartOutcome: Sendable, Hashable {
    /// Not checked yet: the send runs, or the devices still have their time.
    case pending
    /// The app registered an update token of the activity (or APNs did not accept the push-to-start).
    case started(checkedAt: Date)
    /// APNs accepted the push-to-start and the app registered nothing for the activity.
    case notStarted(checkedAt: Date)
}
/// One receipt event of a trace.
public struct TracedReceipt: Sendable, Hashable {
    public var kind: ReceiptEvent.Kind
    /// The action's identifier, for ``ReceiptEvent/Kind/action``.
    public var action: String?
    /// When it happened, by the device's clock.
    public var at: Date
    /// When Herald recorded it.
    public var recordedAt: Date
}
