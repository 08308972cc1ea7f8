/// The devices a send targeted but did not notify because of a rule about the person holding them, by rule.
public struct SuppressedCounts: Sendable, Hashable, CustomStringConvertible {
    /// Their person turned the send's preference category off (or never on, for a category off by default).
    public var preference: Int
    /// Their person had had as many notifications as a frequency cap allows in its window. Counted as the send runs,
    /// among its `targetCount`.
    public var frequencyCap: Int

    public init(preference: Int = 0, frequencyCap: Int = 0) {
        self.preference = preference
        self.frequencyCap = frequencyCap
    }

    /// Every suppressed device, whatever the rule.
    public var total: Int { preference + frequencyCap }

    public var description: String { "preference \(preference), frequency cap \(frequencyCap)" }
}
