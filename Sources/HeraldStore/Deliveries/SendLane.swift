/// Which lane of the send scheduler a background send waits in (docs/sending.md, "Lanes").
///
/// Each lane has its own running limit on every instance, so sends of one class never wait for the slots of
/// another: a Live Activity update or a send to one user's devices is claimed while every campaign slot is taken.
/// Lanes also order the shared in-flight budget: while sends of several lanes want more notifications in flight,
/// the earlier lane in ``priorityOrder`` is served first.
public enum SendLane: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Sent while its request waited: never queued, recorded finished. Inline sends and broadcasts sent at once.
    case inline
    /// Live Activity starts, updates and ends to more devices than an inline send takes.
    case activity
    /// A scheduled broadcast to a channel: one request at its time.
    case broadcast
    /// A send to a user, a tag or a list of tokens, above the inline limit and below the campaign threshold.
    case background
    /// A large or paced send: a topic, or more devices than the campaign threshold, or any send with a `rate`.
    case campaign

    /// The lanes a worker claims from, first served first.
    public static let priorityOrder: [SendLane] = [.activity, .broadcast, .background, .campaign]

    /// The rank of the lane in ``priorityOrder``: lower is served first; inline sends rank before every queued lane.
    public var rank: Int { self == .inline ? -1 : Self.priorityOrder.firstIndex(of: self)! }

    public var description: String { rawValue }
}
