import Foundation
import HeraldCore
import HeraldStore

/// When a send starts: at an instant (`sendAt`), or at one wall-clock time in each device's own time zone
/// (`localTime`).
///
/// A `localTime` send goes out in waves: a wave is every time zone whose local time comes at the same instant. The
/// send waits in the queue for its next wave (``SendRecord/sendAt``) and remembers the instant its waves have
/// reached (``SendRecord/sentThrough``), so a wave is sent once even when a worker dies in it and another resumes.
/// Devices that registered no time zone count as being in the send's `timeZone` (UTC by default).
enum SendSchedule: Sendable, Equatable {
    case at(Date)
    case localTime(LocalDateTime, unsetZone: TimeZone)

    /// The furthest ahead a send may be scheduled.
    static let horizon: TimeInterval = 366 * 86_400
    /// How far in the past a `sendAt` may be (clocks differ): it is sent at once.
    static let pastTolerance: TimeInterval = 60
    /// Time zones reach a wall-clock time from UTC+14 (first) to UTC−12 (last).
    static let earliestOffset: TimeInterval = 14 * 3_600
    static let latestOffset: TimeInterval = -12 * 3_600

    /// Reads `sendAt`, `localTime` and `timeZone` from a send request.
    /// - Parameter now: The time a new send is checked against; `nil` for a stored send a worker reads again.
    /// - Throws: ``APIError`` `400 invalidField` naming the field.
    static func parse(_ fields: JSONFields, now: Date?) throws(APIError) -> SendSchedule? {
        let sendAt = try fields.string("sendAt")
        let localTime = try fields.string("localTime")
        let zoneName = try fields.string("timeZone", bytes: 1...TokenRegistration.maximumTimeZoneBytes)
        if sendAt != nil, localTime != nil {
            throw APIError.invalidField(
                "sendAt", "give sendAt (one instant) or localTime (each device's wall-clock time), not both")
        }
        if zoneName != nil, localTime == nil {
            throw APIError.invalidField(
                "timeZone", "it is the zone of devices without one for a localTime send: give localTime too")
        }
        if let sendAt {
            guard let date = RFC3339.date(sendAt) else {
                throw APIError.invalidField(
                    "sendAt", "use an RFC 3339 time with its offset, such as 2026-12-24T18:00:00Z")
            }
            if let now { try check(first: date, last: date, now: now, field: "sendAt") }
            return .at(date)
        }
        guard let localTime else { return nil }
        guard let local = LocalDateTime(localTime) else {
            throw APIError.invalidField(
                "localTime", "use a date and wall-clock time without offset, such as 2026-12-24T09:00 or 2026-12-24T09:00:00")
        }
        var unsetZone = TimeZone(identifier: "UTC")!
        if let zoneName {
            guard TokenRegistration.isTimeZoneID(zoneName), let zone = TimeZone(identifier: zoneName) else {
                throw APIError.invalidField("timeZone", "use an IANA time zone id such as Europe/Paris")
            }
            unsetZone = zone
        }
        let schedule = SendSchedule.localTime(local, unsetZone: unsetZone)
        if let now {
            let utc = local.instant(in: TimeZone(identifier: "UTC")!)
            try check(
                first: utc.addingTimeInterval(-earliestOffset), last: utc.addingTimeInterval(-latestOffset), now: now,
                field: "localTime")
        }
        return schedule
    }

    private static func check(first: Date, last: Date, now: Date, field: String) throws(APIError) {
        if last < now.addingTimeInterval(-pastTolerance) {
            throw APIError.invalidField(
                field,
                "\(RFC3339.string(last)) has passed\(field == "localTime" ? " in every time zone" : ""): leave it out to send now")
        }
        if first > now.addingTimeInterval(horizon) {
            throw APIError.invalidField(field, "schedule at most 366 days ahead")
        }
    }

    /// When the send first waits for: its instant, or the first moment any time zone reaches its local time.
    var firstInstant: Date {
        switch self {
        case .at(let date): date
        case .localTime(let local, _):
            local.instant(in: TimeZone(identifier: "UTC")!).addingTimeInterval(-Self.earliestOffset)
        }
    }

    /// One wave of a `localTime` send.
    struct Wave: Equatable {
        /// The devices of the wave; `nil` when no time zone is due in it.
        var filter: DeviceQuery.TimeZoneFilter?
        /// When the next wave is due, or `nil` when this is the last.
        var next: Date?
    }

    /// The wave of the time zones whose local time falls after `after` (exclusive; `nil`: from the beginning) and up
    /// to `through` (inclusive), among those the targeted devices have. An `at` send is one wave of every device.
    func wave(zones: DeviceTimeZones, after: Date?, through: Date) -> Wave {
        guard case .localTime(let local, let unsetZone) = self else {
            return Wave(filter: nil, next: nil)
        }
        func due(_ zone: TimeZone) -> Date { local.instant(in: zone) }
        func inWave(_ date: Date) -> Bool { (after.map { date > $0 } ?? true) && date <= through }
        var included = Set<String>()
        var next: Date?
        func consider(_ date: Date) {
            if date > through, next.map({ date < $0 }) ?? true { next = date }
        }
        for name in zones.zones {
            // A stored zone this system does not know (a newer tz database wrote it) counts as unset.
            let zone = TimeZone(identifier: name) ?? unsetZone
            let date = due(zone)
            if inWave(date) { included.insert(name) }
            consider(date)
        }
        let unsetDue = due(unsetZone)
        let unset = zones.includesUnset && inWave(unsetDue)
        if zones.includesUnset { consider(unsetDue) }
        let filter =
            included.isEmpty && !unset ? nil : DeviceQuery.TimeZoneFilter(zones: included, includesUnset: unset)
        return Wave(filter: filter, next: next)
    }
}

/// A calendar date and wall-clock time without a time zone: `2026-12-24T09:00` or `2026-12-24T09:00:00`.
struct LocalDateTime: Sendable, Hashable, CustomStringConvertible {
    let year: Int
    let month: Int
    let day: Int
    let hour: Int
    let minute: Int
    let second: Int

    init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 16 || bytes.count == 19, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
            bytes.count == 16 || bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16),
            let second = bytes.count == 19 ? number(17..<19) : 0,
            (1...12).contains(month), hour < 24, minute < 60, second < 60
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let days = calendar.range(of: .day, in: .month, for: calendar.date(
            from: DateComponents(year: year, month: month, day: 1))!), days.contains(day)
        else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// The instant this wall-clock time comes in a time zone. A time a daylight-saving change skips comes at the
    /// first instant after the gap; one it repeats, at its first occurrence.
    func instant(in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return calendar.nextDate(
            after: calendar.date(from: DateComponents(year: year, month: month, day: day))!.addingTimeInterval(-1),
            matching: DateComponents(hour: hour, minute: minute, second: second),
            matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)
            ?? calendar.date(from: components)!
    }

    var description: String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second))"
    }
}
