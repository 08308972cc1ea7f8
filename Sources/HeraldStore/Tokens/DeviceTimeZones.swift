/// The distinct time zones among some registrations (``TokenStore/timeZones(matching:)``), and for a query that
/// ``DeviceQuery/groupsByOwnQuietHours``, the own quiet hours of their people.
public struct DeviceTimeZones: Sendable, Hashable {
    /// The IANA ids registrations named (of people without their own quiet hours, for a grouping query).
    public var zones: Set<String>
    /// Whether some registrations named none (of people without their own quiet hours, for a grouping query).
    public var includesUnset: Bool
    /// The (zone, own quiet hours) pairs of the registrations whose person chose their own.
    public var ownQuietHours: Set<DeviceQuery.ZoneWithOwnQuietHours>

    public init(
        zones: Set<String> = [], includesUnset: Bool = false,
        ownQuietHours: Set<DeviceQuery.ZoneWithOwnQuietHours> = []
    ) {
        self.zones = zones
        self.includesUnset = includesUnset
        self.ownQuietHours = ownQuietHours
    }

    /// Adds a stored `time_zone` value (`nil`: none).
    package mutating func insert(_ zone: String?) {
        if let zone { zones.insert(zone) } else { includesUnset = true }
    }

    /// Adds a stored `time_zone` value and the person's stored own quiet hours (`nil`: none). The store writes only
    /// texts ``OwnQuietHours`` reads.
    package mutating func insert(_ zone: String?, ownQuietHours text: String?) {
        if let text, let own = OwnQuietHours(text) {
            ownQuietHours.insert(DeviceQuery.ZoneWithOwnQuietHours(zone: zone, quietHours: own))
        } else {
            insert(zone)
        }
    }
}
