import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// A person's own quiet hours: set with their preferences, and judged at send time by (zone, window) group in the
/// device query, on an injected clock.
@Suite("Server: a person's own quiet hours", .timeLimit(.minutes(3)))
struct OwnQuietHoursTests {
    /// 2026-01-01T00:00:00Z: 04:00 in Dubai, 01:00 in Paris, 00:00 in London, 16:00 the day before in Los Angeles.
    static let start = ScheduleTests.start

    /// Amal in Dubai (own 02:00-05:00: quiet until 01:00Z), Pierre in Paris (own: none), Lucy in Los Angeles (own
    /// 15:00-18:00: quiet until 02:00Z), a London device (the app's 22:00-08:00: until 08:00Z), Paul in Paris (the
    /// app's: until 07:00Z).
    static let devices: [(token: DeviceToken, zone: String, user: String, own: String?)] = [
        (testToken(0x71), "Asia/Dubai", "amal", "02:00-05:00"),
        (testToken(0x72), "Europe/Paris", "pierre", "off"),
        (testToken(0x73), "America/Los_Angeles", "lucy", "15:00-18:00"),
        (testToken(0x74), "Europe/London", "lena", nil),
        (testToken(0x75), "Europe/Paris", "paul", nil),
    ]

    static func registerDevices(_ client: ServerClient) async throws {
        for device in devices {
            try await client.register(
                device.token, debug: true, extra: #", "timeZone": "\#(device.zone)", "userId": "\#(device.user)""#)
            if let own = device.own {
                let answer = try await client.call(
                    .put, "/api/preferences/\(device.token.hex)", body: #"{"quietHours": "\#(own)"}"#)
                #expect(answer.status == .ok, "\(answer)")
            }
        }
    }

    static func received(_ emulator: APNSEmulator) throws -> [Int] {
        try devices.map { emulator.device($0.token) == nil ? 0 : try emulator.inbox(for: $0.token).count }
    }

    @Test(
        "defer: own windows win over the app's, a person without one follows the app's; each gets it once at their window's end",
        arguments: Backend.available)
    func deferral(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(backend, clock: wall, configure: QuietHoursTests.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)

            let dry = try await client.call(
                .post, "/api/send?dryRun=true",
                body: #"{"target": {"topic": "com.example.app"}, "alert": "Hello", "quietHours": "drop"}"#, bearer: key)
            #expect(dry.json["targetCount"] == 1 && dry.json["suppressed"]?["quietHoursDropped"] == 4, "\(dry)")

            let answer = try await QuietHoursTests.send(client, key)
            #expect(answer.status == .accepted, "\(answer)")
            #expect(answer.json["targetCount"] == 5 && answer.json["suppressed"]?["quietHoursDeferred"] == 4, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))

            let steps: [(at: String, expected: [Int])] = [
                ("2026-01-01T00:00:00Z", [0, 1, 0, 0, 0]),
                ("2026-01-01T00:59:59Z", [0, 1, 0, 0, 0]),
                ("2026-01-01T01:00:00Z", [1, 1, 0, 0, 0]),
                ("2026-01-01T02:00:00Z", [1, 1, 1, 0, 0]),
                ("2026-01-01T06:59:59Z", [1, 1, 1, 0, 0]),
                ("2026-01-01T07:00:00Z", [1, 1, 1, 0, 1]),
                ("2026-01-01T08:00:00Z", [1, 1, 1, 1, 1]),
                ("2026-01-02T08:00:00Z", [1, 1, 1, 1, 1]),
            ]
            try await QuietHoursTests.step(
                through: steps, wall: wall, app: app, client: client, key: key, send: id,
                received: { try Self.received(emulator) })
            let record = try #require(try await app.store.send(id))
            #expect(record.status == .completed && record.counts.accepted == 5)
            #expect(record.targetCount == record.counts.total + record.suppressed.total, "the counts add up")
            let trace = try await client.call(.get, "/api/sends/\(id)/devices/\(Self.devices[0].token.hex)", bearer: key)
            #expect(trace.json["timeline"]?.arrayValue?[1]["event"] == "quietHoursDeferred", "\(trace)")
            #expect(trace.json["timeline"]?.arrayValue?[1]["until"] == "2026-01-01T01:00:00Z", "her own window: \(trace)")
            let none = try await client.call(.get, "/api/sends/\(id)/devices/\(Self.devices[1].token.hex)", bearer: key)
            #expect(!none.body.contains("quietHours"), "no quiet hours for him: \(none)")
        }
    }

    @Test("the window is set, shown, checked and reset through the app's and the admin's preferences", arguments: Backend.available)
    func api(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: QuietHoursTests.configure) { client, app in
            let bearer = try await SendTests.key(app)
            let phone = testToken(0x81)
            let tablet = testToken(0x82)
            try await client.register(phone, debug: true, extra: #", "userId": "alice""#)
            try await client.register(tablet, debug: true, extra: #", "userId": "alice""#)
            let path = "/api/preferences/\(phone.hex)"

            let initial = try await client.call(.get, path)
            #expect(initial.json["quietHours"]?["window"] == "22:00-08:00", "\(initial)")
            #expect(initial.json["quietHours"]?["chosen"] == .bool(false) && initial.json["quietHours"]?["own"] == .null)
            #expect(initial.json["quietHours"]?["appWindow"] == "22:00-08:00")

            let own = try await client.call(.put, path, body: #"{"quietHours": "23:30-06:45"}"#)
            #expect(own.status == .ok && own.json["quietHours"]?["window"] == "23:30-06:45", "\(own)")
            #expect(own.json["quietHours"]?["chosen"] == .bool(true) && own.json["quietHours"]?["own"] == "23:30-06:45")
            let other = try await client.call(.get, "/api/preferences/\(tablet.hex)")
            #expect(other.json["quietHours"]?["window"] == "23:30-06:45", "the person's, on every device: \(other)")

            let categories = try await client.call(.put, path, body: #"{"categories": {"social": false}}"#)
            #expect(categories.json["quietHours"]?["own"] == "23:30-06:45", "kept when not named: \(categories)")

            let off = try await client.call(
                .put, "/api/devices/\(phone.hex)/preferences", body: #"{"quietHours": "off"}"#, bearer: bearer)
            #expect(off.status == .ok && off.json["quietHours"]?["window"] == .null, "\(off)")
            #expect(off.json["quietHours"]?["own"] == "off")

            let reset = try await client.call(.put, path, body: #"{"quietHours": null}"#)
            #expect(reset.json["quietHours"]?["window"] == "22:00-08:00" && reset.json["quietHours"]?["chosen"] == .bool(false))

            for body in [
                #"{"quietHours": "08:00-08:00"}"#, #"{"quietHours": "8:00-9:00"}"#, #"{"quietHours": "22:00"}"#,
                #"{"quietHours": ""}"#, #"{"quietHours": 5}"#, #"{"quietHours": "24:00-06:00"}"#,
            ] {
                let refused = try await client.call(.put, path, body: body)
                #expect(refused.status == .badRequest && refused.reason == "invalidField", "\(body): \(refused)")
                #expect(refused.json["error"]?.stringValue?.contains("quietHours") == true, "\(body): \(refused)")
            }
            let unchanged = try await client.call(.get, path)
            #expect(unchanged.json["quietHours"]?["chosen"] == .bool(false), "a refusal changes nothing: \(unchanged)")
        }
    }

    @Test("an app without quiet hours refuses a person's own and answers none")
    func appWithout() async throws {
        try await ServerHarness.withServer(configure: PreferenceTests.configure) { client, _ in
            let token = testToken(0x91)
            try await client.register(token, debug: true, extra: #", "userId": "alice""#)
            let shown = try await client.call(.get, "/api/preferences/\(token.hex)")
            #expect(shown.status == .ok && shown.json["quietHours"] == .null, "\(shown)")
            let refused = try await client.call(.put, "/api/preferences/\(token.hex)", body: #"{"quietHours": "23:00-07:00"}"#)
            #expect(refused.status == .badRequest && refused.reason == "invalidField", "\(refused)")
            #expect(refused.json["error"]?.stringValue?.contains("has no quiet hours") == true, "\(refused)")
        }
    }
}
