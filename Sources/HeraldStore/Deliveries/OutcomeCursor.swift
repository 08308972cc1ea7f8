/// Where a page of ``DeliveryStore/outcomes(of:after:limit:)`` ended: the sequence number of its last outcome.
public struct OutcomeCursor: Sendable, Hashable, Comparable, LosslessStringConvertible {
    /// Outcomes of a send are numbered from 1 in the order they were recorded.
    public let sequence: Int64

    public init(sequence: Int64) { self.sequence = sequence }

    public init?(_ description: String) {
        guard let value = Int64(description), value >= 0 else { return nil }
        sequence = value
    }

    public var description: String { String(sequence) }

    public static func < (lhs: OutcomeCursor, rhs: OutcomeCursor) -> Bool { lhs.sequence < rhs.sequence }
}
