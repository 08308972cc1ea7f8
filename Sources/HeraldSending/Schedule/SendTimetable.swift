public import Foundation
public import HeraldStore

/// When each time zone's devices of a send are due: the send's instant, or its `localTime` in that zone, moved to
/// the end of the quiet window for a zone whose devices the send would reach in their quiet hours (`defer`), or
/// never (`drop`).
///
/// A send with a timetable of more than one instant goes out in waves (``SendSchedule/Wave``): each wave is the
/// time zones due at the same instant, the send waits in the queue for the next one and remembers the instant its
/// waves have reached (``HeraldStore/SendRecord/sentThrough``), so a device is sent once even when a worker dies in
/// a wave and another resumes. Everything here depends on the stored job only, so every worker computes the same
/// waves.
public struct SendTimetable: Sendable {
    /// The send's schedule; `nil`: at ``QuietHoursRule/from``.
    public let schedule: SendSchedule?
    /// The send's quiet-hours rule; `nil`: quiet hours do not apply.
    public let quietHours: QuietHoursRule?

    public init(schedule: SendSchedule?, quietHours: QuietHoursRule?) {
        self.schedule = schedule
        self.quietHours = quietHours
    }

    /// Whether the send goes out in waves: a `localTime` send, or one that quiet hours may defer or drop for some
    /// zones.
    public var hasWaves: Bool {
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

    /// The zone quiet hours are judged in for a stored zone name.
    private func quietZone(_ name: String?) -> TimeZone? {
        guard let quietHours else { return nil }
        return name.flatMap(TimeZone.init(identifier:)) ?? quietHours.unsetZone
    }

    /// Whether a zone's devices are due in their quiet hours.
    private func isQuiet(_ name: String?) -> Bool {
        guard let quietHours, let zone = quietZone(name) else { return false }
        return quietHours.window.contains(scheduled(name), in: zone)
    }

    /// When a zone's devices are sent; `nil`: never (dropped in their quiet hours).
    private func due(_ name: String?) -> Date? {
        let date = scheduled(name)
        guard let quietHours, let zone = quietZone(name), let end = quietHours.window.end(of: date, in: zone) else {
            return date
        }
        return quietHours.mode == .defer ? end : nil
    }

    /// The wave of the time zones due after `after` (exclusive; `nil`: from the beginning) and up to `through`
    /// (inclusive), among those the targeted devices have, and when the next wave is due.
    public func wave(zones: DeviceTimeZones, after: Date?, through: Date) -> SendSchedule.Wave {
        var included = Set<String>()
        var unset = false
        var next: Date?
        let names: [String?] = zones.zones.map { $0 } + (zones.includesUnset ? [nil] : [])
        for name in names {
            guard let date = due(name) else { continue }
            if (after.map { date > $0 } ?? true) && date <= through {
                if let name { included.insert(name) } else { unset = true }
            }
            if date > through, next.map({ date < $0 }) ?? true { next = date }
        }
        let filter =
            included.isEmpty && !unset ? nil : DeviceQuery.TimeZoneFilter(zones: included, includesUnset: unset)
        return SendSchedule.Wave(filter: filter, next: next)
    }

    /// What quiet hours did to the devices of a time zone (a stored `time_zone`; `nil`: none).
    public enum QuietVerdict: Sendable, Equatable {
        /// Not in their quiet hours when the send reached them (or the send has no rule).
        case notQuiet
        /// Quiet at `at`, sent at their window's end, `until`.
        case deferred(at: Date, until: Date)
        /// Quiet at `at`, and left out.
        case dropped(at: Date)
    }

    /// What quiet hours did to the devices of a time zone: what the delivery trace of one of them says.
    public func quietVerdict(zone name: String?) -> QuietVerdict {
        guard isQuiet(name) else { return .notQuiet }
        let at = scheduled(name)
        guard let until = due(name) else { return .dropped(at: at) }
        return .deferred(at: at, until: until)
    }

    /// The zones, among those given, whose devices the send reaches in their quiet hours (deferred or dropped, as
    /// the rule says); `nil` when none.
    public func quietZones(_ zones: DeviceTimeZones) -> DeviceQuery.TimeZoneFilter? {
        guard quietHours != nil else { return nil }
        let quiet = Set(zones.zones.filter { isQuiet($0) })
        let unset = zones.includesUnset && isQuiet(nil)
        return quiet.isEmpty && !unset ? nil : DeviceQuery.TimeZoneFilter(zones: quiet, includesUnset: unset)
    }
}
