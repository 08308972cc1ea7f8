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

/// Quiet hours: the app's window in each device's time zone, and what a send does with the devices it reaches in
/// it (`defer`, `drop`, `ignore`), on an injected clock.
@Suite("Server: quiet hours", .timeLimit(.minutes(3)))
struct QuietHoursTests {
    /// 2026-01-01T00:00:00Z, the manual clock's start: 04:00 in Dubai, 01:00 in Paris, 00:00 in London and UTC (all
    /// quiet in a 22:00-08:00 window), 16:00 the day before in Los Angeles (not quiet).
    static let start = ScheduleTests.start

    /// A 22:00-08:00 window; `orders` mandatory, `social` on by default and the default category.
    static func configure(_ configuration: inout ServerConfiguration) {
        PreferenceTests.configure(&configuration)
        configuration.apps[0].quietHours = QuietHours("22:00-08:00")
    }

    /// Dubai, Paris, London, no zone (UTC), Los Angeles.
    static let devices: [(token: DeviceToken, zone: String?)] = [
        (testToken(0x61), "Asia/Dubai"), (testToken(0x62), "Europe/Paris"), (testToken(0x63), "Europe/London"),
        (testToken(0x64), nil), (testToken(0x65), "America/Los_Angeles"),
    ]

    static func registerDevices(_ client: ServerClient) async throws {
        for device in devices {
            try await client.register(
                device.token, debug: true, extra: device.zone.map { #", "timeZone": "\#($0)""# } ?? "")
        }
    }

    static func send(_ client: ServerClient, _ key: String, _ extra: String = "") async throws -> ServerClient.Answer {
        try await client.call(
            .post, "/api/send", body: #"{"target": {"topic": "com.example.app"}, "alert": "Hello"\#(extra)}"#,
            bearer: key)
    }

    static func received(_ emulator: APNSEmulator) throws -> [Int] {
        // A device the emulator never received for has no inbox yet.
        try devices.map { emulator.device($0.token) == nil ? 0 : try emulator.inbox(for: $0.token).count }
    }

    /// Moves the clock to each step's time, lets the worker finish what falls due, and checks which devices have
    /// received the send by then; while any device still waits, the send must still be queued.
    static func step(
        through steps: [(at: String, expected: [Int])], wall: ManualWallClock, app: HeraldApplication,
        client: ServerClient, key: String, send id: SendID, received: () throws -> [Int],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for step in steps {
            wall.set(to: try #require(RFC3339.date(step.at), sourceLocation: sourceLocation))
            await app.worker.waitUntilIdle()
            #expect(try received() == step.expected, "at \(step.at)", sourceLocation: sourceLocation)
            if step.expected.contains(0) {
                let waiting = try await client.call(.get, "/api/sends/\(id)", bearer: key)
                #expect(
                    waiting.json["status"] == "queued", "the send is not completed while devices wait: \(waiting)",
                    sourceLocation: sourceLocation)
            }
        }
    }

    @Test(
        "defer: devices in quiet hours get the notification once at their window's end in their own zone, three zones and one without",
        arguments: Backend.available)
    func deferral(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(backend, clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)

            let answer = try await Self.send(client, key)
            #expect(answer.status == .accepted, "a send that defers devices goes out in waves: \(answer)")
            #expect(answer.json["targetCount"] == 5, "deferred devices are still targeted: \(answer)")
            #expect(answer.json["suppressed"]?["quietHoursDeferred"] == 4 && answer.json["suppressed"]?["quietHoursDropped"] == 0)
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            var browser = ConsoleClient(client)
            try await browser.signIn(key)
            let page = try await browser.call(.get, "/console/sends/\(id)").body
            #expect(page.contains("Rules: 4 deferred to the end of their quiet hours."), "\(page)")

            // The window ends at 08:00 local: 04:00Z in Dubai, 07:00Z in Paris, 08:00Z in London and UTC.
            let steps: [(at: String, expected: [Int])] = [
                ("2026-01-01T00:00:00Z", [0, 0, 0, 0, 1]),
                ("2026-01-01T03:59:59Z", [0, 0, 0, 0, 1]),
                ("2026-01-01T04:00:00Z", [1, 0, 0, 0, 1]),
                ("2026-01-01T06:59:59Z", [1, 0, 0, 0, 1]),
                ("2026-01-01T07:00:00Z", [1, 1, 0, 0, 1]),
                ("2026-01-01T08:00:00Z", [1, 1, 1, 1, 1]),
                ("2026-01-02T08:00:00Z", [1, 1, 1, 1, 1]),
            ]
            try await Self.step(
                through: steps, wall: wall, app: app, client: client, key: key, send: id,
                received: { try Self.received(emulator) })
            let record = try #require(try await app.store.send(id))
            #expect(record.status == .completed && record.counts.accepted == 5)
            #expect(record.targetCount == record.counts.total + record.suppressed.total, "the counts add up")
            let trace = try await client.call(.get, "/api/sends/\(id)/devices/\(Self.devices[1].token.hex)", bearer: key)
            let events = trace.json["timeline"]?.arrayValue?.compactMap { $0["event"]?.stringValue } ?? []
            #expect(events.prefix(3) == ["accepted", "quietHoursDeferred", "attempt"], "\(trace)")
            #expect(trace.json["timeline"]?.arrayValue?[1]["until"] == "2026-01-01T07:00:00Z", "\(trace)")
            let awake = try await client.call(.get, "/api/sends/\(id)/devices/\(Self.devices[4].token.hex)", bearer: key)
            #expect(!awake.body.contains("quietHours"), "\(awake)")
        }
    }

    @Test("drop: devices in quiet hours are left out and counted; nothing reaches them later", arguments: Backend.available)
    func drop(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(backend, clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)

            let dry = try await client.call(
                .post, "/api/send?dryRun=true",
                body: #"{"target": {"topic": "com.example.app"}, "alert": "Hello", "quietHours": "drop"}"#,
                bearer: key)
            #expect(dry.json["targetCount"] == 1 && dry.json["suppressed"]?["quietHoursDropped"] == 4, "\(dry)")

            let answer = try await Self.send(client, key, #", "quietHours": "drop""#)
            #expect(answer.status == .ok && answer.json["status"] == "completed", "\(answer)")
            #expect(answer.json["targetCount"] == 1 && answer.json["suppressed"]?["quietHoursDropped"] == 4, "\(answer)")
            #expect(answer.json["suppressed"]?["quietHoursDeferred"] == 0)
            let id = try #require(answer.json["id"]?.stringValue)
            let trace = try await client.call(.get, "/api/sends/\(id)/devices/\(Self.devices[0].token.hex)", bearer: key)
            #expect(trace.json["verdict"]?["code"] == "quietHoursDropped", "\(trace)")
            #expect(trace.json["timeline"]?.arrayValue?.last?["event"] == "quietHoursDropped", "\(trace)")
            wall.set(to: try #require(RFC3339.date("2026-01-01T09:00:00Z")))
            await app.worker.waitUntilIdle()
            #expect(try Self.received(emulator) == [0, 0, 0, 0, 1])
        }
    }

    @Test(
        "the dry run counts a device that quiet hours drop and a cap would leave out once, under quiet hours, as the send does; now and at a sendAt",
        arguments: Backend.available)
    func dryRunCountsEachDeviceOnce(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        let configure: (inout ServerConfiguration) -> Void = {
            Self.configure(&$0)
            $0.apps[0].frequencyCaps = [try! FrequencyCap(parsing: "*:1/day")]
        }
        try await ServerHarness.withServer(backend, clock: wall, configure: configure) { client, app in
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            // New York: 19:00 at the start, awake; 02:30 at 07:30Z, quiet.
            let newYork = testToken(0x66)
            try await client.register(newYork, debug: true, extra: #", "timeZone": "America/New_York""#)
            // Dubai (quiet now) and Los Angeles (awake now) have had their one notification of the day.
            let first = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"tokens": ["\#(Self.devices[0].token.hex)", "\#(Self.devices[4].token.hex)"]}, "alert": "Hello", "quietHours": "ignore"}"#,
                bearer: key)
            #expect(first.status == .ok && first.json["counts"]?["accepted"] == 2, "\(first)")

            /// `[targetCount, preference, quietHoursDropped, quietHoursDeferred, frequencyCap]` of a send's JSON.
            func figures(_ answer: ServerClient.Answer) -> [Int?] {
                [answer.json["targetCount"]?.intValue]
                    + ["preference", "quietHoursDropped", "quietHoursDeferred", "frequencyCap"].map {
                        answer.json["suppressed"]?[$0]?.intValue
                    }
            }
            // Now: Dubai is dropped (not also capped), Los Angeles capped, New York sent to.
            let body = #"{"target": {"topic": "com.example.app"}, "alert": "Hello", "quietHours": "drop""#
            let dry = try await client.call(.post, "/api/send?dryRun=true", body: body + "}", bearer: key)
            #expect(figures(dry) == [2, 0, 4, 0, 1], "\(dry)")
            let sent = try await client.call(.post, "/api/send", body: body + "}", bearer: key)
            #expect(sent.status == .ok && sent.json["counts"]?["accepted"] == 1, "\(sent)")
            #expect(figures(sent) == figures(dry), "the dry run's figures are the send's: \(sent)")

            // At 07:30Z: Dubai (11:30) awake and capped, Paris (08:30) awake; London, no zone, Los Angeles (23:30) and
            // New York quiet, dropped.
            let scheduled = body + #", "sendAt": "2026-01-01T07:30:00Z"}"#
            let dryLater = try await client.call(.post, "/api/send?dryRun=true", body: scheduled, bearer: key)
            #expect(figures(dryLater) == [2, 0, 4, 0, 1], "\(dryLater)")
            let queued = try await client.call(.post, "/api/send", body: scheduled, bearer: key)
            #expect(queued.status == .accepted, "\(queued)")
            let id = try #require(queued.json["id"]?.stringValue.flatMap(SendID.init))
            wall.set(to: try #require(RFC3339.date("2026-01-01T07:30:00Z")))
            await app.worker.waitUntilIdle()
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.counts.accepted == 1, "\(finished)")
            let record = try await client.call(.get, "/api/sends/\(id)", bearer: key)
            #expect(figures(record) == figures(dryLater), "the dry run's figures are the send's: \(record)")
        }
    }

    @Test("ignore: every device gets it at once")
    func ignore() async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            let answer = try await Self.send(client, key, #", "quietHours": "ignore""#)
            #expect(answer.status == .ok && answer.json["targetCount"] == 5, "\(answer)")
            #expect(answer.json["suppressed"]?["quietHoursDeferred"] == 0 && answer.json["suppressed"]?["quietHoursDropped"] == 0)
            #expect(try Self.received(emulator) == [1, 1, 1, 1, 1])
        }
    }

    @Test(
        "a mandatory category, a time-sensitive or critical alert and a background push go through quiet hours",
        arguments: [
            #", "preferenceCategory": "orders""#, #", "interruptionLevel": "time-sensitive""#,
            #", "interruptionLevel": "critical""#,
        ])
    func exempt(_ extra: String) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            let answer = try await Self.send(client, key, #", "quietHours": "drop""# + extra)
            #expect(answer.status == .ok && answer.json["targetCount"] == 5, "\(answer)")
            #expect(answer.json["suppressed"]?["quietHoursDropped"] == 0)
            #expect(try Self.received(emulator) == [1, 1, 1, 1, 1])
            let background = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"topic": "com.example.app"}, "contentAvailable": true, "quietHours": "drop"}"#,
                bearer: key)
            #expect(background.status == .ok && background.json["targetCount"] == 5, "\(background)")
            #expect(try Self.received(emulator) == [2, 2, 2, 2, 2])
        }
    }

    @Test("with a preference opt-out: each rule counts its own devices, and target = sent + suppressed", arguments: Backend.available)
    func combinedWithPreferences(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(backend, clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            // Paris (quiet) and Los Angeles (not quiet) turn social off.
            for device in [Self.devices[1], Self.devices[4]] {
                let off = try await client.call(
                    .put, "/api/preferences/\(device.token.hex)", body: #"{"categories": {"social": false}}"#)
                #expect(off.status == .ok, "\(off)")
            }
            let answer = try await Self.send(client, key, #", "quietHours": "drop""#)
            #expect(answer.status == .ok, "\(answer)")
            #expect(answer.json["targetCount"] == 0, "\(answer)")
            #expect(answer.json["suppressed"]?["preference"] == 2 && answer.json["suppressed"]?["quietHoursDropped"] == 3)
            #expect(try Self.received(emulator) == [0, 0, 0, 0, 0])

            let deferred = try await Self.send(client, key)
            #expect(deferred.json["targetCount"] == 3 && deferred.json["suppressed"]?["quietHoursDeferred"] == 3, "\(deferred)")
            #expect(deferred.json["suppressed"]?["preference"] == 2)
            let id = try #require(deferred.json["id"]?.stringValue.flatMap(SendID.init))
            wall.set(to: try #require(RFC3339.date("2026-01-01T08:00:00Z")))
            // Idle wakes the worker for the waves now due.
            await app.worker.waitUntilIdle()
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.counts.accepted == 3 && finished.targetCount == 3, "\(finished)")
            let received = try Self.received(emulator)
            #expect(received == [1, 0, 1, 1, 0], "\(received)")
            let all = Self.devices.count
            #expect(finished.counts.total + finished.suppressed.total == all, "target = sent + suppressed by reason")
        }
    }

    @Test("a send at a future instant judges quiet hours at that instant")
    func scheduled() async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            // 07:30Z: 11:30 in Dubai and 08:30 in Paris (awake), 07:30 in London and UTC (quiet), 23:30 in Los Angeles (quiet).
            let answer = try await Self.send(client, key, #", "sendAt": "2026-01-01T07:30:00Z""#)
            #expect(answer.json["suppressed"]?["quietHoursDeferred"] == 3, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            wall.set(to: try #require(RFC3339.date("2026-01-01T07:30:00Z")))
            await app.worker.waitUntilIdle()
            #expect(try Self.received(emulator) == [1, 1, 0, 0, 0])
            wall.set(to: try #require(RFC3339.date("2026-01-01T08:00:00Z")))
            await app.worker.waitUntilIdle()
            #expect(try Self.received(emulator) == [1, 1, 1, 1, 0])
            // 07:30Z is 23:30 in Los Angeles, quiet too: its window ends at 08:00 there, 16:00Z.
            wall.set(to: try #require(RFC3339.date("2026-01-01T16:00:00Z")))
            await app.worker.waitUntilIdle()
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.counts.accepted == 5)
            #expect(try Self.received(emulator) == [1, 1, 1, 1, 1])
        }
    }

    @Test("a cancelled send sends none of its deferred waves")
    func cancelled() async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall, configure: Self.configure) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            let answer = try await Self.send(client, key)
            let id = try #require(answer.json["id"]?.stringValue)
            await app.worker.waitUntilIdle()
            #expect(try Self.received(emulator) == [0, 0, 0, 0, 1])
            let cancelled = try await client.call(.delete, "/api/sends/\(id)", bearer: key)
            #expect(cancelled.status == .ok && cancelled.json["status"] == "cancelled", "\(cancelled)")
            wall.set(to: try #require(RFC3339.date("2026-01-01T09:00:00Z")))
            await app.worker.waitUntilIdle()
            #expect(try Self.received(emulator) == [0, 0, 0, 0, 1])
        }
    }

    @Test(
        "a server stopped between the waves of a deferred send and started after them sends each waiting device once, and nothing twice",
        arguments: Backend.available)
    func restartBetweenWaves(backend: Backend) async throws {
        try await TestDatabase.with(backend) { try await restartBetweenWaves(databaseURL: $0) }
    }

    private func restartBetweenWaves(databaseURL: String) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withRestartableServers(databaseURL: databaseURL, clock: wall, configure: Self.configure) {
            emulator, server in
            let before = try await server()
            let id = try await before.test(.router) { test in
                let client = ServerClient(client: test)
                let bearer = try await SendTests.key(before)
                try await Self.registerDevices(client)
                let answer = try await Self.send(client, bearer)
                #expect(answer.json["suppressed"]?["quietHoursDeferred"] == 4, "\(answer)")
                await before.worker.waitUntilIdle()
                // Dubai's wave, then the server stops.
                wall.set(to: try #require(RFC3339.date("2026-01-01T04:00:00Z")))
                await before.worker.waitUntilIdle()
                return try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            }
            #expect(try Self.received(emulator) == [1, 0, 0, 0, 1], "the first two waves before the stop")

            // Down through Paris's 07:00Z; started at 08:30Z: Paris, London and the device without a zone, once each.
            wall.set(to: try #require(RFC3339.date("2026-01-01T08:30:00Z")))
            let after = try await server()
            try await after.test(.router) { _ in
                let finished = try await after.worker.waitUntilFinished(id)
                #expect(finished.status == .completed && finished.counts.accepted == 5, "\(finished)")
                await after.worker.waitUntilIdle()
            }
            #expect(try Self.received(emulator) == [1, 1, 1, 1, 1], "every device once")
        }
    }

    @Test("a bad quietHours is 400 naming the field, and nothing is sent")
    func badMode() async throws {
        try await ServerHarness.withServer(configure: Self.configure) { client, app in
            let key = try await SendTests.key(app)
            try await Self.registerDevices(client)
            let answer = try await Self.send(client, key, #", "quietHours": "later""#)
            #expect(answer.status == .badRequest && answer.json["reason"] == "invalidField", "\(answer)")
            #expect(answer.body.contains("quietHours"))
            #expect(try await app.store.recentSends(after: nil, limit: 10).sends.isEmpty)
        }
    }
}

/// The window and the timetable, without a server.
@Suite("Quiet hours: windows and waves")
struct QuietHoursWindowTests {
    @Test("windows parse strictly, cross midnight and end at their end in the zone, across a daylight-saving change")
    func windows() throws {
        let window = try #require(QuietHours("22:00-07:30"))
        #expect(window.start == 1_320 && window.end == 450 && window.description == "22:00-07:30")
        for bad in ["", "22:00", "22:00-22:00", "24:00-07:00", "22:60-07:00", "2200-0700", "22:00-7:30", "a"] {
            #expect(QuietHours(bad) == nil, "\(bad)")
        }
        #expect(window.contains(minuteOfDay: 1_320) && window.contains(minuteOfDay: 0) && window.contains(minuteOfDay: 449))
        #expect(!window.contains(minuteOfDay: 450) && !window.contains(minuteOfDay: 1_319))
        let day = try #require(QuietHours("09:00-17:00"))
        #expect(day.contains(minuteOfDay: 540) && !day.contains(minuteOfDay: 1_020))

        let paris = try #require(TimeZone(identifier: "Europe/Paris"))
        // 2026-03-29 02:00 Paris is skipped; a window ending 02:30 ends at 03:00 local (01:00Z).
        let gap = try #require(QuietHours("23:00-02:30"))
        let night = try #require(RFC3339.date("2026-03-28T23:30:00Z"))
        #expect(gap.end(of: night, in: paris) == RFC3339.date("2026-03-29T01:00:00Z"))
        #expect(window.end(of: try #require(RFC3339.date("2026-01-01T12:00:00Z")), in: paris) == nil, "not quiet")
    }

    @Test("a deferring timetable sends awake zones at once and quiet ones at their window's end; dropping never")
    func timetable() throws {
        let from = try #require(RFC3339.date("2026-01-01T00:00:00Z"))
        let window = try #require(QuietHours("22:00-08:00"))
        let zones = DeviceTimeZones(zones: ["Asia/Dubai", "America/Los_Angeles"], includesUnset: true)
        let deferring = SendTimetable(
            schedule: nil,
            quietHours: QuietHoursRule(mode: .defer, window: window, unsetZone: TimeZone(identifier: "UTC")!, from: from))
        let first = deferring.wave(zones: zones, after: nil, through: from)
        #expect(first.filter == DeviceQuery.TimeZoneFilter(zones: ["America/Los_Angeles"], includesUnset: false))
        #expect(first.next == RFC3339.date("2026-01-01T04:00:00Z"))
        let dubai = deferring.wave(zones: zones, after: from, through: first.next!)
        #expect(dubai.filter == DeviceQuery.TimeZoneFilter(zones: ["Asia/Dubai"], includesUnset: false))
        #expect(dubai.next == RFC3339.date("2026-01-01T08:00:00Z"))
        let last = deferring.wave(zones: zones, after: first.next!, through: dubai.next!)
        #expect(last.filter == DeviceQuery.TimeZoneFilter(zones: [], includesUnset: true) && last.next == nil)
        #expect(
            deferring.quietZones(zones) == DeviceQuery.TimeZoneFilter(zones: ["Asia/Dubai"], includesUnset: true))

        let dropping = SendTimetable(
            schedule: nil,
            quietHours: QuietHoursRule(mode: .drop, window: window, unsetZone: TimeZone(identifier: "UTC")!, from: from))
        let only = dropping.wave(zones: zones, after: nil, through: from)
        #expect(only.filter == DeviceQuery.TimeZoneFilter(zones: ["America/Los_Angeles"], includesUnset: false))
        #expect(only.next == nil)
    }
}
