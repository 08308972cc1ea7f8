import Foundation
@testable import HeraldServer
import Testing

@Suite("Server: RFC 3339 timestamps")
struct RFC3339Tests {
    @Test(
        "UTC, seconds unless there are milliseconds, the same as Foundation's ISO 8601",
        arguments: [0, 1_767_225_600, 1_767_225_600.25, 951_782_400.5, 4_107_542_399.5, 1_709_164_800, -86_400.5, 68_256_000])
    func matchesFoundation(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        var style = Date.ISO8601FormatStyle(includingFractionalSeconds: seconds.rounded(.down) != seconds)
        style.timeZone = TimeZone(identifier: "UTC")!
        #expect(RFC3339.string(date) == date.formatted(style))
    }
}
