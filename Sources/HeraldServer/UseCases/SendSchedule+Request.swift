import Foundation
import HeraldCore
import HeraldSending
import HeraldStore

extension SendSchedule {
    /// Reads `sendAt`, `localTime` and `timeZone` from a send request; ``check(at:)`` says whether it is still ahead.
    /// - Throws: ``APIError`` `400 invalidField` naming the field.
    static func parse(_ fields: JSONFields) throws(APIError) -> SendSchedule? {
        let sendAt = try fields.string("sendAt")
        let localTime = try fields.string("localTime")
        let zoneName = try fields.string("timeZone", bytes: 1...RegistrationRules.maximumTimeZoneBytes)
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
        return .localTime(local, unsetZone: unsetZone)
    }

    /// Refuses a schedule a new send cannot have at `now`: passed (beyond ``pastTolerance``; for `localTime`, in every
    /// time zone) or more than ``horizon`` ahead. A stored send a worker reads again is not checked.
    /// - Throws: ``APIError`` `400 invalidField` naming `sendAt` or `localTime`.
    func check(at now: Date) throws(APIError) {
        switch self {
        case .at(let date):
            try Self.check(first: date, last: date, now: now, field: "sendAt")
        case .localTime(let local, _):
            let utc = local.instant(in: TimeZone(identifier: "UTC")!)
            try Self.check(
                first: utc.addingTimeInterval(-Self.earliestOffset), last: utc.addingTimeInterval(-Self.latestOffset),
                now: now, field: "localTime")
        }
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
}
