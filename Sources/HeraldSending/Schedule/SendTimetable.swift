package import Foundation
package import HeraldStore

/// When each time zone's devices of a send are due: the send's instant, or its `localTime` in that zone, moved to
/// the end of the quiet window for a zone whose devices the send would reach in their quiet hours (`defer`), or
/// never (`drop`). People who chose their own quiet hours (``HeraldStore/OwnQuietHours``) are judged by their window
/// instead of the app's: their devices are grouped by (zone, window) pair, as the device query groups them
/// (``HeraldStore/DeviceQuery/groupsByOwnQuietHours``), so the rule stays a filter of that query.
///
/// A send with a timetable of more than one instant goes out in waves (``SendSchedule/Wave``): each wave is the
/// time zones due at the same instant, the send waits in the queue for the next one and remembers the instant its
/// waves have reached (``HeraldStore/SendRecord/sentThrough``), so a device is sent once even when a worker dies in
/// a wave and another resumes. Everything here depends on the stored job only, so every worker computes the same
/// waves.
package struct SendTimetable: Sendable {
    /// The send's schedule; `nil`: at ``QuietHoursRule/from``.
    package let schedule: SendSchedule?
    /// The send's quiet-hours rule; `nil`: quiet hours do not apply.
    package let quietHours: QuietHoursRule?

    package init(schedule: SendSchedule?, quietHours: QuietHoursRule?) {
        self.schedule = schedule
        self.quietHours = quietHours
    }

    /// Whether the send goes out in waves: a `localTime` send, or one that quiet hours may defer or drop for some
    /// zones.
    package var hasWaves: Bool {
        if case .localTime = schedule { return true }
        return quietHours != nil
    }

    /// When a zone's devices are due before quiet hours (`nil`: devices without a zone, or one this system does
    /// not know).
    private func scheduled(_ name: String?) -> Date {
        switch schedule {
        case .localTime(let local, let unsetZone):
            return local.instant(in: name.flatMap(TimeZone.init(identifier:)) ?? unsetZone)
        case .at(let date):
            return date
        case nil:
            return quietHours?.from ?? .distantPast
        }
    }

    /// A group of devices due together: a stored zone name (`nil`: none), and their person's own quiet hours
    /// (`nil`: the app's window).
    private struct Group: Hashable {
        var zone: String?
        var own: OwnQuietHours?
    }

    /// The zone quiet hours are judged in for a stored zone name.
    private func quietZone(_ name: String?) -> TimeZone? {
        guard let quietHours else { return nil }
        return name.flatMap(TimeZone.init(identifier:)) ?? quietHours.unsetZone
    }

    /// The window a group is judged by: its person's own, none when they chose none, else the app's.
    private func window(_ group: Group) -> QuietHours? {
        guard let quietHours else { return nil }
        guard let own = group.own else { return quietHours.window }
        return own.window
    }

    /// Whether a group's devices are due in their quiet hours.
    private func isQuiet(_ group: Group) -> Bool {
        guard let window = window(group), let zone = quietZone(group.zone) else { return false }
        return window.contains(scheduled(group.zone), in: zone)
    }

    /// When a group's devices are sent; `nil`: never (dropped in their quiet hours).
    private func due(_ group: Group) -> Date? {
        let date = scheduled(group.zone)
        guard let quietHours, let window = window(group), let zone = quietZone(group.zone),
            let end = window.end(of: date, in: zone)
        else {
            return date
        }
        return quietHours.mode == .defer ? end : nil
    }

    /// The groups of the targeted devices.
    private func groups(_ zones: DeviceTimeZones) -> [Group] {
        zones.zones.map { Group(zone: $0) } + (zones.includesUnset ? [Group(zone: nil)] : [])
            + zones.ownQuietHours.map { Group(zone: $0.zone, own: $0.quietHours) }
    }

    /// A filter of some groups; `nil` when there are none.
    private func timeZoneFilter(of groups: some Sequence<Group>) -> DeviceQuery.TimeZoneFilter? {
        var filter = DeviceQuery.TimeZoneFilter(zones: [], includesUnset: false)
        for group in groups {
            if let own = group.own {
                filter.ownQuietHours.insert(DeviceQuery.ZoneWithOwnQuietHours(zone: group.zone, quietHours: own))
            } else if let zone = group.zone {
                filter.zones.insert(zone)
            } else {
                filter.includesUnset = true
            }
        }
        return filter.isEmpty ? nil : filter
    }

    /// The wave of the groups (time zones, and people's own quiet hours) due after `after` (exclusive; `nil`: from
    /// the beginning) and up to `through` (inclusive), among those the targeted devices have, and when the next wave
    /// is due.
    package func wave(zones: DeviceTimeZones, after: Date?, through: Date) -> SendSchedule.Wave {
        var included: [Group] = []
        var next: Date?
        for group in groups(zones) {
            guard let date = due(group) else { continue }
            if (after.map { date > $0 } ?? true) && date <= through { included.append(group) }
            if date > through, next.map({ date < $0 }) ?? true { next = date }
        }
        return SendSchedule.Wave(filter: timeZoneFilter(of: included), next: next)
    }

    /// What quiet hours did to the devices of a time zone: what the delivery trace of one of them says.
    package enum QuietVerdict: Sendable, Equatable {
        /// Not in their quiet hours when the send reached them (or the send has no rule).
        case notQuiet
        /// Quiet at `at`, sent at their window's end, `until`.
        case deferred(at: Date, until: Date)
        /// Quiet at `at`, and left out.
        case dropped(at: Date)
    }

    /// What quiet hours did to the devices of a time zone (a stored `time_zone`; `nil`: none) whose person chose
    /// `ownQuietHours` (`nil`: the app's window): what the delivery trace of one of them says.
    package func quietVerdict(zone name: String?, ownQuietHours: OwnQuietHours? = nil) -> QuietVerdict {
        let group = Group(zone: name, own: ownQuietHours)
        guard isQuiet(group) else { return .notQuiet }
        let at = scheduled(name)
        guard let until = due(group) else { return .dropped(at: at) }
        return .deferred(at: at, until: until)
    }

    /// The groups, among those given, whose devices the send reaches in their quiet hours (deferred or dropped, as
    /// the rule says); `nil` when none.
    package func quietZones(_ zones: DeviceTimeZones) -> DeviceQuery.TimeZoneFilter? {
        guard quietHours != nil else { return nil }
        return timeZoneFilter(of: groups(zones).filter { isQuiet($0) })
    }
}
