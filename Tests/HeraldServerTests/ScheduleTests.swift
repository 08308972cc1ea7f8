import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import HeraldWebhooks
import HummingbirdTesting
import Testing

@testable import HeraldServer

/// Scheduled and paced sends: `sendAt`, `localTime` in each device's time zone, `rate`, on injected clocks.
@Suite("Sends: scheduling and throttling", .timeLimit(.minutes(3)))
struct ScheduleTests {
    /// 2026-01-01T00:00:00Z, the manual clock's start.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    static func send(_ client: ServerClient, _ key: String, _ extra: String, target: String = #"{"topic": "com.example.app"}"#)
        async throws -> ServerClient.Answer
    {
        try await client.call(
            .post, "/api/send", body: #"{"target": \#(target), "alert": "Good morning"\#(extra)}"#, bearer: key)
    }

    /// Waits, in real time but bounded, for what another task does next: the worker sleeps after it reports idle.
    @Test("a send at a future instant waits, then fires once at its time: the worker wakes for it", arguments: Backend.available)
    func sendAt(backend: Backend) async throws {
        let wall = ManualWallClock(Self.start)
        let sleep = ManualClock()
        // Webhook delivery's idle looks also sleep a second: off, so the one-second sleep below is the worker's.
        try await ServerHarness.withServer(
            backend, clock: wall, sleepClock: sleep, configure: { $0.webhooks.enabled = false }
        ) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let (one, two) = (testToken(0x31), testToken(0x32))
            try await client.register(one, debug: true)
            try await client.register(two, debug: true)

            let answer = try await Self.send(client, key, #", "sendAt": "2026-01-01T01:00:00Z""#)
            #expect(answer.status == .accepted, "a scheduled send always waits in the queue: \(answer)")
            #expect(answer.json["status"] == "queued" && answer.json["sendAt"] == "2026-01-01T01:00:00Z")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            let listed = try await client.call(.get, "/api/sends", bearer: key)
            #expect(listed.json["sends"]?.arrayValue?.first?["id"]?.stringValue == id.description, "\(listed)")
            #expect(listed.json["sends"]?.arrayValue?.first?["sendAt"] == "2026-01-01T01:00:00Z")

            await app.worker.waitUntilIdle()
            #expect(emulator.device(one) == nil && emulator.device(two) == nil, "nothing before its time")

            wall.advance(by: .seconds(3599))
            await app.worker.waitUntilIdle()
            #expect(emulator.device(one) == nil, "a second early is still early")
            // The idle worker sleeps exactly until the send is due: the wall clock says one second.
            try #require(await sleep.waitForRequestedSleeps(where: { $0.last == .seconds(1) }) != nil)

            wall.advance(by: .seconds(1))
            let finished = try await sleep.advancing(by: .seconds(1)) { try await app.worker.waitUntilFinished(id) }
            #expect(finished.status == .completed && finished.counts.accepted == 2)
            await app.worker.waitUntilIdle()
            #expect(try emulator.inbox(for: one).count == 1 && emulator.inbox(for: two).count == 1, "once each")
        }
    }

    @Test("localTime 09:00 reaches each device at 09:00 in its own time zone; devices without one use the send's")
    func localTime() async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let (tokyo, newYork, paris) = (testToken(0x41), testToken(0x42), testToken(0x43))
            try await client.register(tokyo, debug: true, extra: #", "timeZone": "Asia/Tokyo""#)
            try await client.register(newYork, debug: true, extra: #", "timeZone": "America/New_York""#)
            try await client.register(paris, debug: true)

            let answer = try await Self.send(
                client, key, #", "localTime": "2026-01-02T09:00", "timeZone": "Europe/Paris""#)
            #expect(answer.status == .accepted, "\(answer)")
            #expect(answer.json["sendAt"] == "2026-01-01T19:00:00Z", "first due where 09:00 comes first (UTC+14)")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            func received() -> [Bool] {
                [tokyo, newYork, paris].map { emulator.device($0) != nil }
            }
            // 09:00 in Tokyo is 00:00Z, in Paris 08:00Z, in New York (EST) 14:00Z.
            let steps: [(at: String, expected: [Bool])] = [
                ("2026-01-01T19:00:00Z", [false, false, false]),
                ("2026-01-01T23:59:59Z", [false, false, false]),
                ("2026-01-02T00:00:00Z", [true, false, false]),
                ("2026-01-02T07:59:59Z", [true, false, false]),
                ("2026-01-02T08:00:00Z", [true, false, true]),
                ("2026-01-02T13:59:59Z", [true, false, true]),
                ("2026-01-02T14:00:00Z", [true, true, true]),
            ]
            for step in steps {
                wall.set(to: try #require(RFC3339.date(step.at)))
                await app.worker.waitUntilIdle()
                #expect(received() == step.expected, "at \(step.at)")
            }
            let record = try #require(try await app.store.send(id))
            #expect(record.status == .completed && record.counts.accepted == 3)
            for token in [tokyo, newYork, paris] { #expect(try emulator.inbox(for: token).count == 1) }
        }
    }

    @Test("a cancelled scheduled send sends nothing when its time comes")
    func cancelled() async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await client.register(testToken(0x51), debug: true)
            let answer = try await Self.send(client, key, #", "sendAt": "2026-01-01T00:10:00Z""#)
            let id = try #require(answer.json["id"]?.stringValue)
            let cancelled = try await client.call(.delete, "/api/sends/\(id)", bearer: key)
            #expect(cancelled.status == .ok && cancelled.json["status"] == "cancelled", "\(cancelled)")
            wall.advance(by: .seconds(3600))
            await app.worker.waitUntilIdle()
            #expect(emulator.device(testToken(0x51)) == nil)
        }
    }

    @Test("after downtime a scheduled send goes out late within the catch-up limit, and is skipped beyond it")
    func catchUp() async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall, configure: { $0.sending.catchUpLimit = .seconds(7200) }) {
            client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            try await client.register(testToken(0x61), debug: true, extra: #", "tags": ["late"]"#)
            try await client.register(testToken(0x62), debug: true, extra: #", "tags": ["missed"]"#)
            let late = try await Self.send(
                client, key, #", "sendAt": "2026-01-01T03:00:00Z""#, target: #"{"tag": "late"}"#)
            let missed = try await Self.send(
                client, key, #", "sendAt": "2026-01-01T00:30:00Z""#, target: #"{"tag": "missed"}"#)
            let lateID = try #require(late.json["id"]?.stringValue.flatMap(SendID.init))
            let missedID = try #require(missed.json["id"]?.stringValue.flatMap(SendID.init))
            // As if no server ran from before 00:30 until 04:00: one is an hour late, the other three and a half.
            wall.set(to: try #require(RFC3339.date("2026-01-01T04:00:00Z")))
            await app.worker.waitUntilIdle()
            #expect(try await app.store.send(lateID)?.status == .completed)
            #expect(try emulator.inbox(for: testToken(0x61)).count == 1)
            let skipped = try #require(try await app.store.send(missedID))
            #expect(skipped.status == .failed && skipped.counts.total == 0)
            #expect(skipped.message?.contains("Missed its time") == true, "\(skipped.message ?? "")")
            #expect(emulator.device(testToken(0x62)) == nil)
        }
    }

    @Test(
        "a server stopped before a send's time and started after it catches the send up within the limit, and skips one beyond it",
        arguments: Backend.available)
    func restartCatchUp(backend: Backend) async throws {
        try await TestDatabase.with(backend) { try await restartCatchUp(databaseURL: $0) }
    }

    private func restartCatchUp(databaseURL: String) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withRestartableServers(
            databaseURL: databaseURL, clock: wall, configure: { $0.sending.catchUpLimit = .seconds(7200) }
        ) { emulator, server in
            let (late, missed) = (testToken(0x65), testToken(0x66))
            let before = try await server()
            let ids = try await before.test(.router) { test in
                let client = ServerClient(client: test)
                let key = try await SendTests.key(before)
                try await client.register(late, debug: true, extra: #", "tags": ["late"]"#)
                try await client.register(missed, debug: true, extra: #", "tags": ["missed"]"#)
                var ids: [SendID] = []
                for (at, tag) in [("2026-01-01T03:00:00Z", "late"), ("2026-01-01T00:30:00Z", "missed")] {
                    let answer = try await Self.send(
                        client, key, #", "sendAt": "\#(at)""#, target: #"{"tag": "\#(tag)"}"#)
                    ids.append(try #require(answer.json["id"]?.stringValue.flatMap(SendID.init)))
                }
                await before.worker.waitUntilIdle()
                return ids
            }
            #expect(emulator.device(late) == nil && emulator.device(missed) == nil, "stopped before either time")

            // Down from 00:00 to 04:00: one send is an hour late, the other three and a half.
            wall.set(to: try #require(RFC3339.date("2026-01-01T04:00:00Z")))
            let after = try await server()
            try await after.test(.router) { _ in
                await after.worker.waitUntilIdle()
                #expect(try await after.store.send(ids[0])?.status == .completed)
                let skipped = try #require(try await after.store.send(ids[1]))
                #expect(skipped.status == .failed && skipped.message?.contains("Missed its time") == true, "\(skipped)")
            }
            #expect(try emulator.inbox(for: late).count == 1, "caught up, once")
            #expect(emulator.device(missed) == nil, "skipped beyond the limit")
        }
    }

    @Test(
        "two servers on one PostgreSQL database and one emulator: a scheduled send, each wave of a localTime send, and a scheduled broadcast fire once, counted in the emulator",
        .enabled(if: testDatabaseURL != nil, "set HERALD_TEST_DATABASE_URL"))
    func twoInstances() async throws {
        try await TestDatabase.with(.postgres) { try await twoInstances(databaseURL: $0) }
    }

    /// Both servers send to one emulator in its own listeners (`HERALD_APNS=custom`, every port given), as two
    /// deployments would share APNs: what each device's inbox holds is what APNs got.
    private func twoInstances(databaseURL: String) async throws {
        let wall = ManualWallClock(Self.start)
        let key = TestSigningKeys.make()
        let emulator = try APNSEmulator(
            configuration: EmulatorConfiguration(
                adminPort: nil, trustedKeys: [ProviderTokenVerifier.TrustedKey(key)]
            ).servingChannels())
        try await emulator.start()
        try await withCleanup({ await emulator.shutdown() }) {
            func port(_ environment: APNSEnvironment, _ service: EmulatorService) throws -> Int {
                try #require(emulator.port(for: environment, service: service))
            }
            let host = APNSMode.CustomHost(
                host: "127.0.0.1", productionPort: try port(.production, .devicePush),
                developmentPort: try port(.development, .devicePush),
                broadcastProductionPort: try port(.production, .broadcast),
                broadcastDevelopmentPort: try port(.development, .broadcast),
                channelsProductionPort: try port(.production, .channelManagement),
                channelsDevelopmentPort: try port(.development, .channelManagement),
                trustPEM: emulator.certificateAuthorityPEM)
            var servers: [HeraldApplication] = []
            for index in 0..<2 {
                servers.append(
                    try await ServerHarness.build(databaseURL: databaseURL, clock: wall, logger: nil) { configuration in
                        configuration.apns = .custom(host)
                        configuration.apps = [AppConfiguration(bundleID: ServerHarness.topic, credentials: .key(key))]
                        configuration.instanceID = "api-\(index)"
                    })
            }
            let built = servers
            try await built[0].test(.router) { first in
                try await built[1].test(.router) { second in
                    try await self.fireOnce(
                        clients: [ServerClient(client: first), ServerClient(client: second)], servers: built,
                        emulator: emulator, wall: wall)
                }
            }
        }
    }

    private func fireOnce(
        clients: [ServerClient], servers: [HeraldApplication], emulator: APNSEmulator, wall: ManualWallClock
    ) async throws {
        let key = try await SendTests.key(servers[0])
        let zones = ["Asia/Tokyo", "Europe/Paris", "America/New_York"]
        let devices = (1...30).map { testToken($0) }
        for (n, token) in devices.enumerated() {
            try await clients[n % 2].register(token, debug: true, extra: #", "timeZone": "\#(zones[n % 3])""#)
        }
        // One server takes each request; either may fire each send.
        let scheduled = try await Self.send(clients[0], key, #", "sendAt": "2026-01-01T06:00:00Z""#)
        let local = try await Self.send(clients[1], key, #", "localTime": "2026-01-01T09:00""#)
        #expect(scheduled.status == .accepted && local.status == .accepted, "\(scheduled) \(local)")
        let created = try await clients[1].call(
            .post, "/api/channels", body: #"{"environment": "production", "storagePolicy": 1}"#, bearer: key)
        #expect(created.status == .created, "the channel-management port of the custom host: \(created)")
        let channel = try #require(created.json["channel"]?["id"]?.stringValue)
        let subscribers = [testToken(0xB1), testToken(0xB2)]
        for token in subscribers {
            _ = try emulator.createDevice(token: token, environment: .production, topic: ServerHarness.topic)
            try emulator.subscribe(token, to: channel)
        }
        let broadcast = try await clients[0].call(
            .post, ChannelTests.path(channel, "/broadcast"),
            body: #"{"contentState": {"score": "0-0"}, "sendAt": "2026-01-01T08:00:00Z"}"#, bearer: key)
        #expect(broadcast.status == .accepted, "\(broadcast)")
        let ids = [scheduled.json["id"], local.json["id"], broadcast.json["send"]?["id"]].compactMap {
            $0?.stringValue.flatMap(SendID.init)
        }
        #expect(ids.count == 3)

        // Through the day: both workers look at every step, and every wave is due at one of them.
        for at in ["2026-01-01T00:00:00Z", "2026-01-01T06:00:00Z", "2026-01-01T08:00:00Z", "2026-01-01T14:00:00Z"] {
            wall.set(to: try #require(RFC3339.date(at)))
            let (first, second) = (servers[0].worker, servers[1].worker)
            async let firstIdle: Void = first.waitUntilIdle()
            async let secondIdle: Void = second.waitUntilIdle()
            _ = await (firstIdle, secondIdle)
        }
        for id in ids { #expect(try await servers[0].store.send(id)?.status == .completed, "\(id)") }
        for token in devices {
            #expect(try emulator.inbox(for: token).count == 2, "each device once per send")
        }
        for token in subscribers {
            let inbox = try emulator.inbox(for: token)
            #expect(inbox.count == 1 && inbox.first?.channelID == channel, "the broadcast once: \(inbox)")
        }
    }

    @Test("rate holds a 2,000-device send to its ceiling: the emulator's receive times span at least what the rate allows")
    func rateEndToEnd() async throws {
        try await ServerHarness.withServer { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let tokens = (1...2000).map { testToken(0, bytes: 30).hex + String(format: "%04x", $0) }
            try await DeviceSeeding.register(
                try tokens.map {
                    TokenRegistration(token: try DeviceToken(hex: $0), topic: ServerHarness.topic, environment: .development)
                }, in: app.store)
            let answer = try await Self.send(client, key, #", "rate": 1000"#)
            #expect(answer.status == .accepted, "\(answer)")
            let id = try #require(answer.json["id"]?.stringValue.flatMap(SendID.init))
            let finished = try await app.worker.waitUntilFinished(id)
            #expect(finished.counts.accepted == 2000)
            var times: [Date] = []
            for hex in tokens {
                let inbox = try emulator.inbox(for: try DeviceToken(hex: hex))
                #expect(inbox.count == 1)
                times += inbox.map(\.receivedAt)
            }
            // 2,000 starts at 1,000 a second: 10 every 10 ms, so the last goes out 1.99 s after the first. Only the
            // lower bound is checked: a slow machine makes the send longer, never shorter.
            let span = try #require(times.max()).timeIntervalSince(try #require(times.min()))
            #expect(span >= 1.9, "2,000 devices at 1,000 a second took \(span) s")
        }
    }

    @Test("bad schedules are 400 with the field, and nothing is queued", arguments: [
        (#", "sendAt": "tomorrow""#, "sendAt"),
        (#", "sendAt": "2025-12-31T23:00:00Z""#, "sendAt"),
        (#", "sendAt": "2027-06-01T00:00:00Z""#, "sendAt"),
        (#", "sendAt": "2026-01-02T00:00:00Z", "localTime": "2026-01-02T09:00""#, "sendAt"),
        (#", "localTime": "2026-02-30T09:00""#, "localTime"),
        (#", "localTime": "2026-01-02T09:00Z""#, "localTime"),
        (#", "localTime": "2025-12-30T09:00""#, "localTime"),
        (#", "localTime": "2026-01-02T09:00", "timeZone": "Mars/Base""#, "timeZone"),
        (#", "timeZone": "Europe/Paris""#, "timeZone"),
        (#", "rate": 0"#, "rate"),
        (#", "rate": 1.5"#, "rate"),
    ])
    func badSchedules(_ extra: String, field: String) async throws {
        let wall = ManualWallClock(Self.start)
        try await ServerHarness.withServer(clock: wall) { client, app in
            let key = try await SendTests.key(app)
            let answer = try await Self.send(client, key, extra)
            #expect(answer.status == .badRequest && answer.reason == "invalidField", "\(answer)")
            #expect(answer.json["error"]?.stringValue?.contains("\"\(field)\"") == true, "\(answer)")
            #expect(try await app.store.recentSends(after: nil, limit: 10).sends.isEmpty)
        }
    }

    @Test("rate paces the whole send: 30 devices at 10 a second wait 29 times 100 ms on the injected clock")
    func rate() async throws {
        try await TestDatabase.withMigratedStore(.sqlite) { store in
            for n in 1...30 {
                _ = try await store.upsert(
                    TokenRegistration(token: StoreConformance.token(n), topic: ServerHarness.topic, environment: .development))
            }
            let sender = BulkSender()
            let sleep = ManualClock(advancesAutomatically: true)
            var fanOut = EngineTesting.fanOut(store, sender, maximumInFlight: 1000)
            fanOut.sleepClock = sleep
            var request = SendRequest(
                target: .everyDevice, topic: ServerHarness.topic, content: .typed(Payload(aps: APS(alert: .body("paced")))))
            request.rate = 10
            let apps = AppDirectory([AppConfiguration(bundleID: ServerHarness.topic)])
            let plan = try SendPlan(request, apps: apps, sendID: SendID(), at: Self.start)
            let id = try await store.createSend(NewSend(id: plan.sendID, target: "t", summary: "s", status: .running)).id
            let result = try await fanOut.run(plan, send: id, createdAt: Self.start, after: nil, lease: nil, collect: false)
            #expect(result.finished && result.counts.total == 30)
            #expect(sleep.requestedSleeps == Array(repeating: .milliseconds(100), count: 29))

            request.rate = 1000
            let fast = try SendPlan(request, apps: apps, sendID: SendID(), at: Self.start)
            let second = try await store.createSend(NewSend(id: fast.sendID, target: "t", summary: "s", status: .running))
            let before = sleep.requestedSleeps.count
            _ = try await fanOut.run(fast, send: second.id, createdAt: second.createdAt, after: nil, lease: nil, collect: false)
            #expect(
                sleep.requestedSleeps.dropFirst(before) == [.milliseconds(10), .milliseconds(10)],
                "above 100 a second, starts are granted in batches every 10 ms (10 per tick at 1000 a second)")
        }
    }
}

@Suite("Sends: schedules and local times")
struct SendScheduleTests {
    @Test("local date-times parse strictly")
    func parsing() {
        #expect(LocalDateTime("2026-12-24T09:00")?.description == "2026-12-24T09:00:00")
        #expect(LocalDateTime("2026-12-24T09:00:30")?.description == "2026-12-24T09:00:30")
        for bad in ["2026-12-24", "2026-12-24T9:00", "2026-12-24T09:00Z", "2026-02-29T09:00", "2026-13-01T09:00",
            "2026-12-24T24:00", "2026-12-24 09:00", "２026-12-24T09:00", "2026-12-24T09:60"] {
            #expect(LocalDateTime(bad) == nil, "\(bad)")
        }
        #expect(LocalDateTime("2028-02-29T09:00") != nil, "a leap day")
    }

    @Test("a wall-clock time's instant in a zone, across a daylight-saving gap")
    func instants() throws {
        let nine = try #require(LocalDateTime("2026-07-01T09:00"))
        #expect(RFC3339.string(nine.instant(in: TimeZone(identifier: "Asia/Tokyo")!)) == "2026-07-01T00:00:00Z")
        #expect(RFC3339.string(nine.instant(in: TimeZone(identifier: "America/New_York")!)) == "2026-07-01T13:00:00Z")
        // 02:30 does not exist in New York on 2026-03-08: it comes at the end of the gap, 03:00 EDT.
        let skipped = try #require(LocalDateTime("2026-03-08T02:30"))
        #expect(RFC3339.string(skipped.instant(in: TimeZone(identifier: "America/New_York")!)) == "2026-03-08T07:00:00Z")
    }

    @Test("waves take the zones due in their window and name the next")
    func waves() throws {
        let schedule = SendSchedule.localTime(
            try #require(LocalDateTime("2026-01-02T09:00")), unsetZone: TimeZone(identifier: "UTC")!)
        let zones = DeviceTimeZones(zones: ["Asia/Tokyo", "America/New_York", "Asia/Kolkata"], includesUnset: true)
        let date = { (text: String) in RFC3339.date(text)! }
        let first = schedule.wave(zones: zones, after: nil, through: schedule.firstInstant)
        #expect(first.filter == nil && first.next == date("2026-01-02T00:00:00Z"))
        let tokyo = schedule.wave(zones: zones, after: schedule.firstInstant, through: date("2026-01-02T00:00:00Z"))
        #expect(tokyo.filter == .init(zones: ["Asia/Tokyo"], includesUnset: false))
        #expect(tokyo.next == date("2026-01-02T03:30:00Z"), "Kolkata is UTC+5:30")
        let late = schedule.wave(zones: zones, after: date("2026-01-02T00:00:00Z"), through: date("2026-01-02T14:00:00Z"))
        #expect(late.filter == .init(zones: ["Asia/Kolkata", "America/New_York"], includesUnset: true) && late.next == nil)
    }
}
