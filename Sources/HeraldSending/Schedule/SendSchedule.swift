package import Foundation
package import HeraldStore

/// When a send starts: at an instant (`sendAt`), or at one wall-clock time in each device's own time zone
/// (`localTime`).
///
/// A `localTime` send goes out in waves: a wave is every time zone whose local time comes at the same instant. The
/// send waits in the queue for its next wave (``HeraldStore/SendRecord/sendAt``) and remembers the instant its waves
/// have reached (``HeraldStore/SendRecord/sentThrough``), so a wave is sent once even when a worker dies in it and
/// another resumes. Devices that registered no time zone count as being in the send's `unsetZone` (UTC by default).
package enum SendSchedule: Sendable, Hashable {
    /// At one instant.
    case at(Date)
    /// At a wall-clock time in each device's time zone; devices without one count as being in `unsetZone`.
    case localTime(LocalDateTime, unsetZone: TimeZone)

    /// The furthest ahead a send may be scheduled.
    package static let horizon: TimeInterval = 366 * 86_400
    /// How far in the past a `sendAt` may be (clocks differ): it is sent at once.
    package static let pastTolerance: TimeInterval = 60
    /// Time zones reach a wall-clock time from UTC+14 (first) to UTC−12 (last): the first offset.
    package static let earliestOffset: TimeInterval = 14 * 3_600
    /// The last offset to reach a wall-clock time.
    package static let latestOffset: TimeInterval = -12 * 3_600

    /// When the send first waits for: its instant, or the first moment any time zone reaches its local time.
    package var firstInstant: Date {
        switch self {
        case .at(let date): date
        case .localTime(let local, _):
            local.instant(in: TimeZone(identifier: "UTC")!).addingTimeInterval(-Self.earliestOffset)
        }
    }

    /// One wave of a `localTime` send.
    package struct Wave: Sendable, Equatable {
        /// The devices of the wave; `nil` when no time zone is due in it.
        package var filter: DeviceQuery.TimeZoneFilter?
        /// When the next wave is due, or `nil` when this is the last.
        package var next: Date?
    }

    /// The wave of the time zones whose local time falls after `after` (exclusive; `nil`: from the beginning) and up
    /// to `through` (inclusive), among those the targeted devices have. An `at` send is one wave of every device.
    package func wave(zones: DeviceTimeZones, after: Date?, through: Date) -> Wave {
        guard case .localTime = self else { return Wave(filter: nil, next: nil) }
        return SendTimetable(schedule: self, quietHours: nil).wave(zones: zones, after: after, through: through)
    }
}
