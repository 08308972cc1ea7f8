public import Foundation

/// A daily window of local wall-clock time in which a person does not want to be disturbed: `22:00-08:00`.
///
/// The window starts at ``start`` (included) and ends at ``end`` (excluded); an end before the start crosses
/// midnight. Times are minutes of the day in the device's own time zone.
public struct QuietHours: Sendable, Hashable, CustomStringConvertible {
    /// The first quiet minute of the day, 0 to 1439.
    public let start: Int
    /// The first minute that is no longer quiet, 0 to 1439; not ``start``.
    public let end: Int

    /// A window; `nil` when a minute is outside 0...1439 or the window is empty (start equals end).
    public init?(start: Int, end: Int) {
        guard (0..<1_440).contains(start), (0..<1_440).contains(end), start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// Reads `HH:MM-HH:MM`, such as `22:00-08:00`; `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.minute(of: String(parts[0])), let end = Self.minute(of: String(parts[1]))
        else { return nil }
        self.init(start: start, end: end)
    }

    /// The minute of the day `HH:MM` names (`07:30` is 450); `nil` unless two digits, a colon and two digits.
    public static func minute(of text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
            bytes.indices.allSatisfy({ $0 == 2 || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) })
        else { return nil }
        let hour = Int(bytes[0] - UInt8(ascii: "0")) * 10 + Int(bytes[1] - UInt8(ascii: "0"))
        let minute = Int(bytes[3] - UInt8(ascii: "0")) * 10 + Int(bytes[4] - UInt8(ascii: "0"))
        guard hour < 24, minute < 60 else { return nil }
        return hour * 60 + minute
    }

    /// `HH:MM` of a minute of the day.
    public static func text(ofMinute minute: Int) -> String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(minute / 60)):\(two(minute % 60))"
    }

    /// Whether a minute of the day is quiet.
    public func contains(minuteOfDay minute: Int) -> Bool {
        start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
    }

    /// Whether an instant is quiet in a time zone.
    public func contains(_ date: Date, in zone: TimeZone) -> Bool {
        contains(minuteOfDay: Self.minuteOfDay(date, in: zone))
    }

    /// When the quiet window that holds `date` ends in a time zone; `nil` when `date` is not quiet there. A window
    /// end a daylight-saving change skips comes at the first instant after the gap.
    public func end(of date: Date, in zone: TimeZone) -> Date? {
        guard contains(date, in: zone) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.nextDate(
            after: date, matching: DateComponents(hour: end / 60, minute: end % 60, second: 0),
            matchingPolicy: .nextTime, repeatedTimePolicy: .first, direction: .forward)
    }

    /// The local minute of the day of an instant in a time zone.
    public static func minuteOfDay(_ date: Date, in zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }

    /// `22:00-08:00`, which ``init(_:)`` reads back.
    public var description: String { "\(Self.text(ofMinute: start))-\(Self.text(ofMinute: end))" }
}

/// A person's own quiet hours, chosen from the app: their own window, or none at all. A person without one follows
/// the app's window.
public enum OwnQuietHours: Sendable, Hashable, CustomStringConvertible {
    /// Quiet in this window instead of the app's.
    case window(QuietHours)
    /// Never quiet: the person wants the app's notifications at any hour.
    case off

    /// The stored and JSON text of ``off``.
    public static let offText = "off"

    /// Reads `HH:MM-HH:MM` or `off`; `nil` for anything else.
    public init?(_ text: String) {
        if text == Self.offText {
            self = .off
        } else if let window = QuietHours(text) {
            self = .window(window)
        } else {
            return nil
        }
    }

    /// The window that applies to the person: theirs, or `nil` for none.
    public var window: QuietHours? {
        if case .window(let window) = self { return window }
        return nil
    }

    /// `22:00-07:00` or `off`, which ``init(_:)`` reads back.
    public var description: String {
        switch self {
        case .window(let window): window.description
        case .off: Self.offText
        }
    }
}
