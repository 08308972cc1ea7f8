import Foundation
public import HeraldCore
public import HeraldStore

extension FrequencyCap {
    /// The most notifications a cap may allow per window.
    public static let maximumLimit = 1_000_000

    /// Reads a cap as the configuration writes it: `[category:]N/period`, where the category is a name or `*` (every
    /// non-mandatory category; also when left out) and the period is `30m`, `12h`, `1d`, `1w` or `minute`, `hour`,
    /// `day`, `week`: `marketing:3/day`, `*:10/1d`, `20/1w`.
    /// - Throws: ``FrequencyCapSyntaxError`` saying what is wrong.
    public init(parsing text: String) throws(FrequencyCapSyntaxError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var category: String?
        var rest = Substring(trimmed)
        if let colon = rest.lastIndex(of: ":") {
            let name = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
            if name != "*" {
                guard PreferenceCategory.isValidName(name) else {
                    throw FrequencyCapSyntaxError(text: text, problem: "\"\(name)\" is not a category name")
                }
                category = name
            }
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let limit = Int(parts[0]), (1...Self.maximumLimit).contains(limit) else {
            throw FrequencyCapSyntaxError(
                text: text, problem: "the count before / must be a whole number from 1 to \(Self.maximumLimit)")
        }
        guard let seconds = Self.periodSeconds(parts[1]), seconds <= Self.maximumPeriodSeconds else {
            throw FrequencyCapSyntaxError(
                text: text, problem: "the period after / must be 30m, 12h, 1d, 1w, minute, hour, day or week (at most 366 days)")
        }
        self.init(category: category, limit: limit, periodSeconds: seconds)
    }

    private static func periodSeconds(_ text: Substring) -> Int? {
        let words = ["minute": 60, "hour": 3_600, "day": 86_400, "week": 604_800]
        if let seconds = words[text.lowercased()] { return seconds }
        // Seconds (`90s`) only for what ``FrequencyCap/description`` writes of an odd period.
        guard let unit = text.last, let seconds = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800][String(unit).lowercased()],
            let count = Int(text.dropLast()), count >= 1, count <= maximumPeriodSeconds / seconds
        else { return nil }
        return count * seconds
    }

    /// The caps of an app that a send counts against: none for a mandatory category or a push other than an alert;
    /// else the app-wide caps and those of the send's category.
    public static func applying(
        _ caps: [FrequencyCap], category: PreferenceCategory?, pushType: APNSPushType
    ) -> [FrequencyCap] {
        guard pushType == .alert, category?.mode != .mandatory else { return [] }
        return caps.filter { $0.category == nil || $0.category == category?.name }
    }
}

/// A frequency cap that cannot be read.
public struct FrequencyCapSyntaxError: Error, Sendable, CustomStringConvertible {
    public let text: String
    public let problem: String

    public var description: String {
        "\"\(text)\" is not a frequency cap: \(problem); write [category:]count/period, such as marketing:3/day or *:10/1d."
    }
}
