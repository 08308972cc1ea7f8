/// The devices a send targeted but did not notify because of a rule about the person holding them, by rule.
public struct SuppressedCounts: Sendable, Hashable, CustomStringConvertible {
    /// Their person turned the send's preference category off (or never on, for a category off by default).
    public var preference: Int

    public init(preference: Int = 0) {
        self.preference = preference
    }

    /// Every suppressed device, whatever the rule.
    public var total: Int { preference }

    public var description: String { "preference \(preference)" }
}
