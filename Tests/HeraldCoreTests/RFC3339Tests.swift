import Foundation
import HeraldCore
import Testing

@Suite("Core: RFC 3339 timestamps")
struct RFC3339Tests {
    @Test(
        "UTC, seconds unless there are milliseconds, the same as Foundation's ISO 8601, and read back",
        arguments: [0, 1_767_225_600, 1_767_225_600.25, 951_782_400.5, 4_107_542_399.5, 1_709_164_800, -86_400.5, 68_256_000])
    func matchesFoundation(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        var style = Date.ISO8601FormatStyle(includingFractionalSeconds: seconds.rounded(.down) != seconds)
        style.timeZone = TimeZone(identifier: "UTC")!
        #expect(RFC3339.string(date) == date.formatted(style))
        #expect(RFC3339.date(RFC3339.string(date)) == date)
    }

    @Test(
        "timestamps with offsets, fractions and lowercase letters are read as the instant they name",
        arguments: [
            ("2026-01-01T00:00:00Z", 1_767_225_600.0), ("2026-01-01t01:30:00+01:30", 1_767_225_600),
            ("2025-12-31T19:00:00.5-05:00", 1_767_225_600.5), ("2024-02-29T00:00:00.000000001z", 1_709_164_800.000000001),
            ("1970-01-01T00:00:00Z", 0),
        ])
    func reads(text: String, seconds: Double) throws {
        let date = try #require(RFC3339.date(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 1e-6)
    }

    @Test(
        "anything else is refused",
        arguments: [
            "", "2026-01-01", "2026-01-01 00:00:00Z", "2026-13-01T00:00:00Z", "2026-04-31T00:00:00Z",
            "2025-02-29T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00", "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00.1234567891Z", "2026-01-01T00:00:00+0100", "2026-01-01T00:00:00Z ", "٢٠٢٦-01-01T00:00:00Z",
            "2026-01-01T00:00:00" + String(repeating: "0", count: 40) + "Z",
        ])
    func refuses(text: String) {
        #expect(RFC3339.date(text) == nil)
    }
}
