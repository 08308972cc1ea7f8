import Foundation
import HeraldCore
import HeraldStore

extension DeviceRegistration {
    /// The registration in the request's field names and canonical form (docs/api-registration.md): `token`
    /// lowercase, both `environment` and `debug`, `tokenKind` always, absent optional fields left out, and
    /// `createdAt`/`updatedAt` in RFC 3339 UTC. Admin lookups add `registeredAt` and the invalidation.
    func json(includingAdminFields: Bool = false) -> JSONValue {
        var members: [String: JSONValue] = [
            "token": .string(registration.token.hex),
            "environment": .string(registration.environment.name),
            "debug": .bool(registration.environment.isDevelopment),
            "topic": .string(registration.topic),
            "tokenKind": .string(registration.tokenKind.name),
            "createdAt": .string(RFC3339.string(createdAt)),
            "updatedAt": .string(RFC3339.string(updatedAt)),
        ]
        if let userID = registration.userID { members["userId"] = .string(userID) }
        if !registration.preferredLanguages.isEmpty {
            members["preferredLanguages"] = .array(registration.preferredLanguages.map { .string($0) })
        }
        if let appVersion = registration.appVersion { members["appVersion"] = .string(appVersion) }
        if let platform = registration.platform { members["platform"] = .string(platform.name) }
        if let installationID = registration.installationID {
            members["installationId"] = .string(installationID.uuidString.lowercased())
        }
        if !registration.tags.isEmpty { members["tags"] = .array(registration.tags.map { .string($0) }) }
        if includingAdminFields {
            members["registeredAt"] = .string(RFC3339.string(registeredAt))
            members["active"] = .bool(isActive)
            if let invalidation {
                var details: [String: JSONValue] = [
                    "reason": .string(invalidation.reason.rawValue),
                    "recordedAt": .string(RFC3339.string(invalidation.recordedAt)),
                ]
                if let timestamp = invalidation.apnsTimestamp {
                    details["apnsTimestamp"] = .string(RFC3339.string(timestamp))
                }
                members["invalidation"] = .object(details)
            }
        }
        return .object(members)
    }
}

/// RFC 3339 timestamps in UTC with milliseconds when there are any: `2026-01-02T08:00:00Z`, `…:00.250Z`.
///
/// Formatted by hand from the civil calendar (days since 1970 to year, month, day), because Foundation's
/// `ISO8601FormatStyle` costs microseconds per call and every registration answer carries two timestamps.
enum RFC3339 {
    static func string(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, millisecondOfDay) = floorDivide(milliseconds, 86_400_000)
        // Howard Hinnant's civil_from_days.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(millisecondOfDay / 3_600_000, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(millisecondOfDay / 60_000 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(millisecondOfDay / 1000 % 60, 2)
        if millisecondOfDay % 1000 != 0 {
            bytes.append(UInt8(ascii: "."))
            digits(millisecondOfDay % 1000, 3)
        }
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = value / divisor - (value % divisor < 0 ? 1 : 0)
        return (quotient, value - quotient * divisor)
    }
}
