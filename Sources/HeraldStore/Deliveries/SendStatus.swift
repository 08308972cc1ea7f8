/// Where a send is in its life: queued → running → completed or failed.
public enum SendStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Waiting for a worker to claim it.
    case queued
    /// A worker holds its lease and is sending.
    case running
    /// Every target was tried; the counts say how it went.
    case completed
    /// The send stopped before the end; ``SendRecord/message`` says why.
    case failed

    /// Whether the send will not change any more.
    public var isFinal: Bool { self == .completed || self == .failed }

    public var description: String { rawValue }
}
