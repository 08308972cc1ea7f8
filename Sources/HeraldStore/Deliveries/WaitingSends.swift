public import Foundation

/// The sends waiting in one lane: how many, and since when the one that waits longest has.
public struct WaitingSends: Sendable, Hashable {
    /// How many sends wait (queued and due, or running under a lease that ran out).
    public var count: Int
    /// Since when the longest-waiting one waits: its due time (`sendAt`, else its creation), or when its worker's
    /// lease ran out.
    public var oldest: Date
}
