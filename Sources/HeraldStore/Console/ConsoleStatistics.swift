public import Foundation
import HeraldCore

/// A count under a name: an app, an environment, a reason.
public struct Tally: Sendable, Hashable {
    public var name: String
    public var count: Int

    public init(_ name: String, _ count: Int) {
        self.name = name
        self.count = count
    }
}

/// The active devices counted four ways. Each list is largest first; a device without a platform counts as `""`.
public struct DeviceStatistics: Sendable, Hashable {
    public var byTopic: [Tally] = []
    public var byEnvironment: [Tally] = []
    public var byTokenKind: [Tally] = []
    public var byPlatform: [Tally] = []

    public init() {}

    /// Every active device.
    public var total: Int { byTopic.reduce(0) { $0 + $1.count } }
}

/// A count on a UTC day.
public struct DayCount: Sendable, Hashable {
    /// The day's midnight, UTC.
    public var day: Date
    public var count: Int
}

/// The sends created on a UTC day and their outcomes.
public struct DaySends: Sendable, Hashable {
    /// The day's midnight, UTC.
    public var day: Date
    public var sends: Int
    public var counts: OutcomeCounts
}

/// Sends over a period: how many, their outcomes, the tokens removed, the most frequent rejection reasons.
public struct SendStatistics: Sendable, Hashable {
    public var sends: Int
    public var counts: OutcomeCounts
    /// Rejections after which the token was taken out of sends.
    public var removed: Int
    /// Rejection reasons, most frequent first.
    public var topReasons: [Tally]
    /// What devices reported about these sends' notifications (delivery receipts).
    public var receipts: ReceiptCounts

    public init(
        sends: Int, counts: OutcomeCounts, removed: Int, topReasons: [Tally], receipts: ReceiptCounts = ReceiptCounts()
    ) {
        self.sends = sends
        self.counts = counts
        self.removed = removed
        self.topReasons = topReasons
        self.receipts = receipts
    }
}

/// Outcomes of one send that share a kind (`accepted`, `rejected`, `failed`), a reason and an action.
public struct OutcomeGroup: Sendable, Hashable {
    public var kind: String
    /// APNs's reason, for rejections.
    public var reason: String?
    public var action: DeliveryOutcome.Action?
    public var count: Int

    public init(kind: String, reason: String?, action: DeliveryOutcome.Action?, count: Int) {
        self.kind = kind
        self.reason = reason
        self.action = action
        self.count = count
    }
}

/// A device's outcome in one send.
public struct DeviceDelivery: Sendable, Hashable {
    public var sendID: SendID
    /// The send's target and summary, in words.
    public var target: String
    public var summary: String
    public var outcome: DeliveryOutcome

    public init(sendID: SendID, target: String, summary: String, outcome: DeliveryOutcome) {
        self.sendID = sendID
        self.target = target
        self.summary = summary
        self.outcome = outcome
    }
}

/// Where a page of ``ConsoleStore/recentSends(after:limit:)`` ended: its last send's creation time and id.
public struct SendListCursor: Sendable, Hashable, LosslessStringConvertible {
    package let createdAt: Int64
    package let id: SendID

    package init(createdAt: Int64, id: SendID) {
        self.createdAt = createdAt
        self.id = id
    }

    /// Parses `<microseconds>_<send id>`; `nil` for anything else.
    public init?(_ description: String) {
        let parts = description.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]), let id = SendID(String(parts[1])) else { return nil }
        createdAt = time
        self.id = id
    }

    public var description: String { "\(createdAt)_\(id)" }
}

/// One page of sends, newest first.
public struct SendListPage: Sendable, Hashable {
    public var sends: [SendRecord]
    /// Where the next page starts, or `nil` on the last page.
    public var next: SendListCursor?
}
