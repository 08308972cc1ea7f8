import HeraldCore

/// What the attempts of one request met that asked for another, counted by kind: what a give-up reports.
///
/// Bounded whatever the number of attempts: a few kinds, each with its count. Only attempts that missed are recorded,
/// so a request accepted at once never allocates.
struct AttemptLog: Sendable, Hashable {
    /// One kind of miss.
    enum Kind: Sendable, Hashable {
        /// APNs answered with a status and reason that ask for a retry.
        case answered(status: Int, reason: APNSReason)
        /// No answer: the error's code says why.
        case failed(APNSClientError.Code)
    }

    struct Entry: Sendable, Hashable {
        let kind: Kind
        var count: Int
    }

    /// Kinds beyond this many are counted together as "other": the known retryable reasons and error codes are
    /// fewer, so it only bounds what a misbehaving server could make of the log.
    static let maximumKinds = 8

    /// Each kind met, in the order first met.
    private(set) var entries: [Entry] = []
    /// Misses of kinds past ``maximumKinds``.
    private(set) var other = 0

    mutating func record(_ kind: Kind) {
        if let index = entries.firstIndex(where: { $0.kind == kind }) {
            entries[index].count += 1
        } else if entries.count < Self.maximumKinds {
            entries.append(Entry(kind: kind, count: 1))
        } else {
            other += 1
        }
    }

    /// Every miss, counted by kind, the most frequent first: "429 TooManyRequests ×4, connection closed before an
    /// answer ×3".
    var summary: String {
        // A stable sort: kinds met equally often keep the order they were first met.
        let sorted = entries.enumerated().sorted { ($0.element.count, -$0.offset) > ($1.element.count, -$1.offset) }
        var parts = sorted.map { "\(Self.name(of: $0.element.kind)) ×\($0.element.count)" }
        if other > 0 { parts.append("other ×\(other)") }
        return parts.joined(separator: ", ")
    }

    static func name(of kind: Kind) -> String {
        switch kind {
        case .answered(let status, let reason): "\(status) \(reason)"
        case .failed(let code) where code == .connectionClosed: "connection closed or stream reset before an answer"
        case .failed(let code) where code == .timeout: "no answer within the request timeout"
        case .failed(let code) where code == .notProcessed:
            "not processed (refused stream, GOAWAY or closing connection)"
        case .failed(let code) where code == .connectFailed: "no connection"
        case .failed(let code): "\(code)"
        }
    }
}

extension Duration {
    /// The duration for a message: "35 ms", "4.2 s", "10 min 0 s", "2 h 5 min".
    var spoken: String {
        let seconds = RetryPolicy.seconds(self)
        if seconds < 1 { return "\(Int((seconds * 1000).rounded())) ms" }
        if seconds < 60 { return "\((seconds * 10).rounded() / 10) s" }
        let whole = Int(seconds.rounded(.down))
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }
}
