/// One page of a send's outcomes, in the order they were recorded.
public struct OutcomePage: Sendable, Hashable {
    /// The outcomes, at most the requested limit.
    public var outcomes: [DeliveryOutcome]
    /// Where the next page starts, or `nil` when this is the last page.
    public var next: OutcomeCursor?
}

extension OutcomePage {
    /// The page from rows of ``StoreSQL/outcomes(of:after:limit:_:)`` (at most one more than the limit).
    package init(_ rows: [(sequence: Int64, outcome: DeliveryOutcome)], limit: Int) {
        let kept = rows.prefix(limit)
        self.init(
            outcomes: kept.map(\.outcome),
            next: rows.count > limit ? kept.last.map { OutcomeCursor(sequence: $0.sequence) } : nil)
    }
}
