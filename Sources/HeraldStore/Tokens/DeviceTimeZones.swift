/// The distinct time zones among some registrations (``TokenStore/timeZones(matching:)``).
public struct DeviceTimeZones: Sendable, Hashable {
    /// The IANA ids registrations named.
    public var zones: Set<String>
    /// Whether some registrations named none.
    public var includesUnset: Bool

    public init(zones: Set<String> = [], includesUnset: Bool = false) {
        self.zones = zones
        self.includesUnset = includesUnset
    }

    /// Adds a stored `time_zone` value (`nil`: none).
    package mutating func insert(_ zone: String?) {
        if let zone { zones.insert(zone) } else { includesUnset = true }
    }
}
