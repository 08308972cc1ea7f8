/// How many targets of a send ended each way so far.
public struct OutcomeCounts: Sendable, Hashable, CustomStringConvertible {
    /// APNs answered 200.
    public var accepted: Int
    /// APNs answered with an error status and reason.
    public var rejected: Int
    /// No answer from APNs: the retries ran out, or the connection failed.
    public var failed: Int

    public init(accepted: Int = 0, rejected: Int = 0, failed: Int = 0) {
        self.accepted = accepted
        self.rejected = rejected
        self.failed = failed
    }

    /// Every recorded outcome.
    public var total: Int { accepted + rejected + failed }

    /// The counts of a batch of outcomes.
    public init(_ outcomes: some Sequence<DeliveryOutcome>) {
        self.init()
        for outcome in outcomes {
            switch outcome.result {
            case .accepted: accepted += 1
            case .rejected: rejected += 1
            case .failed: failed += 1
            }
        }
    }

    /// Adds outcomes by their stored kind (`accepted`, `rejected`, `failed`).
    package mutating func add(kinds: some Sequence<String>) {
        for kind in kinds {
            switch kind {
            case "accepted": accepted += 1
            case "rejected": rejected += 1
            default: failed += 1
            }
        }
    }

    public var description: String { "accepted \(accepted), rejected \(rejected), failed \(failed)" }
}

extension OutcomeCounts {
    /// Counts from the `accepted, rejected, failed` columns a statement returned.
    package init(stored row: some StoredRow) throws {
        self.init(accepted: Int(try row.integer(0)), rejected: Int(try row.integer(1)), failed: Int(try row.integer(2)))
    }
}
