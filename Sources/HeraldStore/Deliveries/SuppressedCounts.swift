/// The devices a send targeted but did not notify because of a rule about the person holding them, by rule.
public struct SuppressedCounts: Sendable, Hashable, CustomStringConvertible {
    /// Their person turned the send's preference category off (or never on, for a category off by default).
    public var preference: Int
    /// Their person had had as many notifications as a frequency cap allows in its window. Counted as the send runs,
    /// among its `targetCount`.
    public var frequencyCap: Int
    /// The send would have reached them in their quiet hours, and drops such devices.
    public var quietHoursDropped: Int
    /// The send reaches them at the end of their quiet hours instead of when it went out: they are part of the
    /// send's target count, sent in a later wave, and not in ``total``.
    public var quietHoursDeferred: Int
    /// A Live Activity push: the device said its person turned the app's Live Activities off
    /// (``TokenRegistration/activitiesEnabled``).
    public var activitiesDisabled: Int

    public init(
        preference: Int = 0, frequencyCap: Int = 0, quietHoursDropped: Int = 0, quietHoursDeferred: Int = 0,
        activitiesDisabled: Int = 0
    ) {
        self.preference = preference
        self.frequencyCap = frequencyCap
        self.quietHoursDropped = quietHoursDropped
        self.quietHoursDeferred = quietHoursDeferred
        self.activitiesDisabled = activitiesDisabled
    }

    /// Every device left out, whatever the rule (deferred devices are not left out).
    public var total: Int { preference + frequencyCap + quietHoursDropped + activitiesDisabled }

    public var description: String {
        "preference \(preference), frequency cap \(frequencyCap), quiet hours dropped \(quietHoursDropped), deferred \(quietHoursDeferred), activities disabled \(activitiesDisabled)"
    }
}
