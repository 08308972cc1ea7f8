/// A change to a send's status or description: the input of ``DeliveryStore/updateSend(_:_:)``.
///
/// Fields left `nil` keep their stored value. Counts are not here: they follow
/// ``DeliveryStore/recordOutcomes(_:for:checkpoint:)``.
public struct SendUpdate: Sendable, Hashable {
    /// The new status. A final status (or `queued`) also releases the worker's lease.
    public var status: SendStatus?
    /// The number of targets, once known.
    public var targetCount: Int?
    /// Why the send failed, or a note about how it ended.
    public var message: String?

    public init(status: SendStatus? = nil, targetCount: Int? = nil, message: String? = nil) {
        self.status = status
        self.targetCount = targetCount
        self.message = message
    }
}
