/// A change to a send's status or description: the input of ``DeliveryStore/updateSend(_:_:)``.
///
/// Fields left `nil` keep their stored value. Counts follow ``DeliveryStore/recordOutcomes(_:for:checkpoint:)``; only a
/// send without device outcomes (a broadcast) sets them here.
public struct SendUpdate: Sendable, Hashable {
    /// The new status. A final status (or `queued`) also releases the worker's lease.
    public var status: SendStatus?
    /// The number of targets, once known.
    public var targetCount: Int?
    /// Why the send failed, or a note about how it ended.
    public var message: String?
    /// Replaces the counts: for a send whose notifications have no device outcome (a broadcast, one request to APNs
    /// for every subscriber of a channel).
    public var counts: OutcomeCounts?

    public init(
        status: SendStatus? = nil, targetCount: Int? = nil, message: String? = nil, counts: OutcomeCounts? = nil
    ) {
        self.status = status
        self.targetCount = targetCount
        self.message = message
        self.counts = counts
    }
}
