/// Where a send is in its life: queued → running → completed or failed; cancelled from queued or running.
public enum SendStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Waiting for a worker to claim it.
    case queued
    /// A worker holds its lease and is sending.
    case running
    /// Every target was tried; the counts say how it went.
    case completed
    /// The send stopped before the end; ``SendRecord/message`` says why.
    case failed
    /// Someone cancelled it while it was queued or running (``DeliveryStore/cancelSend(_:)``): it is never claimed
    /// or resumed again. A worker that was sending records what it had in flight, so the counts are what was sent.
    case cancelled

    /// Whether the send will not change any more (its counts may still take the outcomes a cancelled send had in
    /// flight).
    public var isFinal: Bool { self == .completed || self == .failed || self == .cancelled }

    public var description: String { rawValue }
}
