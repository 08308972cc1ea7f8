public import Foundation
public import HeraldCore

/// Which registrations a send or an admin lookup targets: explicit tokens, a user's devices, a tag, or every
/// device of a topic, optionally narrowed to one environment and some token kinds.
///
/// ```swift
/// let query = DeviceQuery.topic("com.example.app").environment(.production).kinds([.device])
/// ```
///
/// Invalidated tokens are left out unless ``includingInvalidated()`` is used.
public struct DeviceQuery: Sendable, Hashable, CustomStringConvertible {
    /// What the query selects before its filters.
    package enum Selector: Sendable, Hashable {
        case tokens([DeviceToken])
        case user(String)
        case tag(String)
        case activity(String)
        case topic
    }

    package let selector: Selector
    /// Only registrations of this topic. Always set for ``topic(_:)`` queries.
    public private(set) var topic: String?
    /// Only registrations of this environment, when set.
    public private(set) var environment: APNSEnvironment?
    /// Only registrations of these kinds, when set.
    public private(set) var tokenKinds: Set<TokenKind>?
    /// Whether invalidated tokens (and stale push-to-start tokens) are included.
    public private(set) var includesInvalidated = false
    /// Only registrations in these time zones (and those without one, when ``TimeZoneFilter/includesUnset``).
    public private(set) var timeZones: TimeZoneFilter?
    /// Only push-to-start tokens of this activity attributes type, when set.
    public private(set) var activityType: String?
    /// Only registrations after this position of the query's order, exclusive: the start of a shard of a large send.
    public private(set) var lowerBound: DeviceCursor?
    /// Only registrations up to this position of the query's order, inclusive: the end of a shard of a large send.
    public private(set) var upperBound: DeviceCursor?
    /// Only registrations created at or before this time, when set: a background send reaches the devices registered
    /// when it was accepted, so its counts never pass its target count.
    public private(set) var registeredThrough: Date?
    /// Only registrations whose subject lets a preference category through, when set.
    public private(set) var preference: PreferenceFilter?
    /// Only registrations whose subject has used up one of these caps' windows, when set: a dry run's estimate.
    package private(set) var exhaustedCaps: [CapWindow]?
    /// Whether registrations are grouped by their time zone and their person's own quiet hours, rather than by
    /// time zone alone: ``TokenStore/timeZones(matching:)`` answers (zone, own window) pairs and
    /// ``timeZones`` filters on them. Set for sends with a quiet-hours rule.
    public private(set) var groupsByOwnQuietHours = false
    /// Whether a Live Activity query keeps the tokens whose device said its person turned the app's Live Activities
    /// off (``skipsActivitiesDisabled``): only to count them.
    public private(set) var includesActivitiesDisabled = false

    /// One window of a frequency cap: its start, in microseconds since 1970.
    package struct CapWindow: Sendable, Hashable {
        package var cap: FrequencyCap
        package var windowStart: Int64
    }

    /// Registrations by their `timeZone` (and, for a query that ``groupsByOwnQuietHours``, their person's own quiet
    /// hours: ``zones`` and ``includesUnset`` then hold only people without their own).
    public struct TimeZoneFilter: Sendable, Hashable {
        /// The IANA ids to include.
        public var zones: Set<String>
        /// Whether registrations without a time zone are included.
        public var includesUnset: Bool
        /// The (zone, own quiet hours) pairs of people with their own quiet hours to include.
        public var ownQuietHours: Set<ZoneWithOwnQuietHours>

        public init(zones: Set<String>, includesUnset: Bool, ownQuietHours: Set<ZoneWithOwnQuietHours> = []) {
            self.zones = zones
            self.includesUnset = includesUnset
            self.ownQuietHours = ownQuietHours
        }

        /// Whether the filter lets nothing through.
        public var isEmpty: Bool { zones.isEmpty && !includesUnset && ownQuietHours.isEmpty }
    }

    /// A group of registrations whose person chose their own quiet hours: their time zone and the window.
    public struct ZoneWithOwnQuietHours: Sendable, Hashable, Comparable {
        /// The IANA id; `nil`: registrations without a time zone.
        public var zone: String?
        public var quietHours: OwnQuietHours

        public init(zone: String?, quietHours: OwnQuietHours) {
            self.zone = zone
            self.quietHours = quietHours
        }

        /// The key the query's SQL compares: the zone (empty for none), `|`, the window's text.
        package var key: String { (zone ?? "") + "|" + quietHours.description }

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.key < rhs.key }
    }

    private init(_ selector: Selector, topic: String? = nil) {
        self.selector = selector
        self.topic = topic
    }

    /// The registrations of these tokens (unknown ones are skipped).
    public static func tokens(_ tokens: [DeviceToken]) -> DeviceQuery { DeviceQuery(.tokens(tokens)) }
    /// The registrations of one user id, across topics unless narrowed with ``inTopic(_:)``.
    public static func user(_ userID: String) -> DeviceQuery { DeviceQuery(.user(userID)) }
    /// The registrations carrying a tag, across topics unless narrowed with ``inTopic(_:)``.
    public static func tag(_ tag: String) -> DeviceQuery { DeviceQuery(.tag(tag)) }
    /// The update tokens of one Live Activity, by the app's activity id (``TokenRegistration/activityID``), across
    /// topics unless narrowed with ``inTopic(_:)``.
    public static func activity(_ activityID: String) -> DeviceQuery { DeviceQuery(.activity(activityID)) }
    /// Every registration of a topic.
    public static func topic(_ topic: String) -> DeviceQuery { DeviceQuery(.topic, topic: topic) }

    /// The same query with one of its narrowings changed: what each of the methods below is.
    private func with<Value>(_ narrowing: WritableKeyPath<DeviceQuery, Value>, _ value: Value) -> DeviceQuery {
        var copy = self
        copy[keyPath: narrowing] = value
        return copy
    }

    /// The same query, narrowed to a topic.
    public func inTopic(_ topic: String) -> DeviceQuery { with(\.topic, topic) }

    /// The same query, narrowed to one environment.
    public func environment(_ environment: APNSEnvironment?) -> DeviceQuery { with(\.environment, environment) }

    /// The same query, narrowed to some token kinds (`nil`: every kind).
    public func kinds(_ kinds: Set<TokenKind>?) -> DeviceQuery { with(\.tokenKinds, kinds) }

    /// The same query, narrowed to registrations in some time zones (`nil`: every zone, and none).
    public func timeZones(_ filter: TimeZoneFilter?) -> DeviceQuery { with(\.timeZones, filter) }

    /// The same query, grouping registrations by time zone and their person's own quiet hours
    /// (``groupsByOwnQuietHours``).
    public func groupingByOwnQuietHours(_ group: Bool = true) -> DeviceQuery { with(\.groupsByOwnQuietHours, group) }

    /// The same query, narrowed to the push-to-start tokens of one activity attributes type.
    public func activityType(_ type: String?) -> DeviceQuery { with(\.activityType, type) }

    /// The same query, narrowed to the registrations after a position of its order (exclusive; `nil`: from the
    /// start): what one shard of a large send holds, with ``through(_:)``, for a statement over the shard's range
    /// other than its pages (which walk from a cursor).
    public func after(_ bound: DeviceCursor?) -> DeviceQuery { with(\.lowerBound, bound) }

    /// The same query, narrowed to the registrations up to a position of its order (inclusive; `nil`: to the end):
    /// one shard of a large send walks from its start cursor through its end.
    public func through(_ bound: DeviceCursor?) -> DeviceQuery { with(\.upperBound, bound) }

    /// The same query, narrowed to the registrations created at or before `date` (`nil`: whenever): the devices a
    /// send accepted at `date` targets, however long it runs.
    public func registered(through date: Date?) -> DeviceQuery { with(\.registeredThrough, date) }

    /// The same query, narrowed to the registrations whose subject (``PreferenceSubject``) lets a category through:
    /// chose it on, or made no choice and the category is on by default (`nil`: no preference rule).
    public func preference(_ filter: PreferenceFilter?) -> DeviceQuery { with(\.preference, filter) }

    /// The same query, narrowed to the registrations whose subject has had as many notifications as one of `caps`
    /// allows in its window holding `date`: what a send's caps would leave out if it ran now (an estimate: other
    /// sends may claim or windows roll over before it runs).
    public func exhaustingFrequencyCaps(_ caps: [FrequencyCap], at date: Date) -> DeviceQuery {
        with(\.exhaustedCaps, caps.map { CapWindow(cap: $0, windowStart: $0.window(at: date).start) })
    }

    /// Whether the query leaves out the tokens whose device reported Live Activities off
    /// (``TokenRegistration/activitiesEnabled`` `false`): a query of Live Activity tokens alone, the target of a
    /// `liveactivity` push, does unless ``includingActivitiesDisabled(_:)``.
    public var skipsActivitiesDisabled: Bool {
        guard !includesActivitiesDisabled, let tokenKinds, !tokenKinds.isEmpty else { return false }
        return tokenKinds.isSubset(of: [.liveActivity, .liveActivityStart])
    }

    /// The same query, keeping the tokens whose device reported Live Activities off: what a send counts them with.
    public func includingActivitiesDisabled(_ include: Bool = true) -> DeviceQuery {
        with(\.includesActivitiesDisabled, include)
    }

    /// The same query, with invalidated and stale tokens included (admin lookups).
    public func includingInvalidated(_ include: Bool = true) -> DeviceQuery { with(\.includesInvalidated, include) }

    /// Whether pages are ordered by environment, then token, rather than by token alone.
    ///
    /// A topic query without an environment walks the `(topic, environment, token)` index in its order, so each
    /// page is one index range scan; every other query orders by token.
    package var ordersByEnvironment: Bool {
        if case .topic = selector, environment == nil { return true }
        return false
    }

    /// The kinds filter in a stable order, for binding.
    package var sortedKindNames: [String]? { tokenKinds.map { $0.map(\.name).sorted() } }

    /// Safe to log: explicit tokens are counted, not listed.
    public var description: String {
        var parts: [String]
        switch selector {
        case .tokens(let tokens): parts = ["\(tokens.count) tokens"]
        case .user(let user): parts = ["user \(user)"]
        case .tag(let tag): parts = ["tag \(tag)"]
        case .activity(let id): parts = ["activity \(id)"]
        case .topic: parts = []
        }
        if let topic { parts.append("topic \(topic)") }
        if let environment { parts.append(environment.name) }
        if let names = sortedKindNames { parts.append("kinds " + names.joined(separator: ",")) }
        if let activityType { parts.append("activity type \(activityType)") }
        if let timeZones {
            parts.append(
                "time zones " + (timeZones.zones.sorted() + (timeZones.includesUnset ? ["(none)"] : [])
                    + timeZones.ownQuietHours.sorted().map { "\($0.zone ?? "(none)") (own \($0.quietHours))" })
                    .joined(separator: ","))
        }
        if let preference {
            parts.append("category \(preference.category) (\(preference.enabledByDefault ? "on" : "off") by default)")
        }
        if let registeredThrough { parts.append("registered by \(RFC3339.string(registeredThrough))") }
        if includesInvalidated { parts.append("including invalidated") }
        if lowerBound != nil { parts.append("from a shard's start") }
        if upperBound != nil { parts.append("up to a shard's end") }
        return parts.joined(separator: ", ")
    }
}
