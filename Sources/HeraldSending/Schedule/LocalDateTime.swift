package import Foundation

/// A calendar date and wall-clock time without a time zone: `2026-12-24T09:00` or `2026-12-24T09:00:00`.
package struct LocalDateTime: Sendable, Hashable, CustomStringConvertible {
    /// The year, 0 to 9999.
    package let year: Int
    /// The month, 1 to 12.
    package let month: Int
    /// The day of the month, 1 to its last.
    package let day: Int
    /// The hour, 0 to 23.
    package let hour: Int
    /// The minute, 0 to 59.
    package let minute: Int
    /// The second, 0 to 59; 0 when the text gave none.
    package let second: Int

    /// Reads `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS`; `nil` for anything else, or a date the calendar lacks
    /// (31 April).
    package init?(_ text: String) {
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
    package func instant(in zone: TimeZone) -> Date {
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

    /// `YYYY-MM-DDTHH:MM:SS`, which ``init(_:)`` reads back.
    package var description: String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second))"
    }
}
