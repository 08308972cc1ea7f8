import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Testing

/// A send's stored job: what is written is read back whole; Live Activity payloads are stamped when loaded for a run;
/// version-1 jobs are handed back as request bodies; newer and damaged jobs give errors that say what to do.
@Suite struct SendJobTests {
    static let app = "com.example.app"
    static let sendID = SendID(UUID(uuidString: "019b76da-a800-7eaf-8914-704d34167a6b")!)
    /// 2026-01-01T00:00:00Z.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    static func token(_ byte: UInt8) -> DeviceToken {
        try! DeviceToken(hex: String(repeating: String(format: "%02x", byte), count: 32))
    }

    static func prepared(
        _ payload: Payload, pushType: APNSPushType = .alert, priority: APNSPriority? = nil,
        expiration: APNSExpiration? = nil, collapseID: String? = nil
    ) throws -> PreparedNotification {
        try PushNotification(
            payload, pushType: pushType, topic: pushType.topic(forBundleID: app), priority: priority,
            expiration: expiration, collapseID: collapseID
        ).prepare()
    }

    static func job(
        query: DeviceQuery = DeviceQuery.user("alice").inTopic(app), pushType: APNSPushType = .alert,
        schedule: SendSchedule? = nil, rate: Int? = nil, notifications: [String: PreparedNotification],
        stampsTimestamp: Bool = false
    ) -> SendJob {
        SendJob(
            bundleID: app, query: query, pushType: pushType, schedule: schedule, rate: rate,
            targetDescription: "user alice", summary: "\(pushType) push", notifications: notifications,
            stampsTimestamp: stampsTimestamp)
    }

    /// Writes a job and reads it back as a worker does.
    static func reloaded(_ job: SendJob, sourceLocation: SourceLocation = #_sourceLocation) throws -> SendJob {
        guard case .send(let loaded) = try StoredJob(jsonText: job.jsonText, sendID: sendID) else {
            Issue.record("not read back as a send", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return loaded
    }

    /// The error a stored text gives.
    static func error(_ text: String) -> SendJobError? {
        do {
            _ = try StoredJob(jsonText: text, sendID: sendID)
            return nil
        } catch {
            return error
        }
    }

    @Test("every field is read back as written: app, query, push type, sendAt, rate, words, headers, stamping")
    func roundTrip() throws {
        let notification = try Self.prepared(
            Payload(aps: APS(alert: .body("Hello"), badge: 3), custom: ["order": "42"]), priority: .considerPower,
            expiration: APNSExpiration(secondsSince1970: 1_767_300_000), collapseID: "order-42")
        let job = SendJob(
            bundleID: Self.app,
            query: DeviceQuery.tag("vip").inTopic(Self.app).environment(.production).kinds([.device, .voip])
                .activityType("DeliveryAttributes"),
            pushType: .alert, schedule: .at(Self.start.addingTimeInterval(3600)), rate: 250,
            targetDescription: "tag vip", summary: "alert push", notifications: ["": notification],
            stampsTimestamp: true)
        let loaded = try Self.reloaded(job)
        #expect(loaded == job)
        #expect(loaded.notifications[""]?.body == notification.body, "the body's bytes, as prepared")
        #expect(loaded.notifications[""]?.collapseID == "order-42" && loaded.notifications[""]?.priority == .considerPower)
        #expect(loaded.query.environment == .production && loaded.query.tokenKinds == [.device, .voip])
        #expect(loaded.query.activityType == "DeliveryAttributes" && loaded.rate == 250 && loaded.stampsTimestamp)
    }

    @Test("the quiet-hours rule reads back as written; a bad one says which field")
    func quietHoursRoundTrip() throws {
        let rule = QuietHoursRule(
            mode: .drop, window: try #require(QuietHours("21:30-07:00")),
            unsetZone: try #require(TimeZone(identifier: "Europe/Paris")), from: Self.start)
        let notification = try Self.prepared(Payload(aps: APS(alert: .body("Hello"))))
        let job = SendJob(
            bundleID: Self.app, query: DeviceQuery.topic(Self.app), pushType: .alert, schedule: nil, rate: nil,
            targetDescription: "every device", summary: "alert push", notifications: ["": notification],
            stampsTimestamp: false, quietHours: rule)
        #expect(try Self.reloaded(job).quietHours == rule)
        #expect(try Self.reloaded(Self.job(notifications: ["": notification])).quietHours == nil)
        let bad = job.jsonText.replacingOccurrences(of: "21:30-07:00", with: "21:30")
        #expect(Self.error(bad)?.message.contains("window") == true)
    }

    @Test(
        "every device query reads back as written",
        arguments: [
            DeviceQuery.tokens([token(1), token(2), token(3)]).inTopic(app),
            DeviceQuery.user("alice").inTopic(app).environment(.development),
            DeviceQuery.tag("beta").inTopic(app).kinds([.device]),
            DeviceQuery.activity("order-7").inTopic(app).kinds([.liveActivity]),
            DeviceQuery.topic(app).environment(.production).kinds([.liveActivityStart]).activityType("Match"),
            DeviceQuery.topic(app).includingInvalidated(),
            DeviceQuery.topic(app).preference(PreferenceFilter(category: "marketing", enabledByDefault: false)),
            DeviceQuery.user("alice").inTopic(app).preference(PreferenceFilter(category: "social", enabledByDefault: true)),
        ])
    func selectors(query: DeviceQuery) throws {
        let job = Self.job(query: query, notifications: ["": try Self.prepared(Payload(aps: APS(alert: .body("x"))))])
        let loaded = try Self.reloaded(job)
        #expect(loaded.query == query, "\(loaded.query)")
        #expect(loaded.targetsEveryDevice == (query.description.hasPrefix("topic ")))
    }

    @Test("the frequency caps a send counts against are read back; a job without them has none; a bad one is refused")
    func frequencyCaps() throws {
        var job = Self.job(notifications: ["": try Self.prepared(Payload(aps: APS(alert: .body("x"))))])
        #expect(try Self.reloaded(job).frequencyCaps.isEmpty)
        #expect(try JSONValue(parsing: job.jsonText)["frequencyCaps"] == nil, "older readers see the same job")
        job.frequencyCaps = [
            FrequencyCap(category: "marketing", limit: 3, periodSeconds: 86_400),
            FrequencyCap(category: nil, limit: 10, periodSeconds: 604_800),
            FrequencyCap(category: nil, limit: 1, periodSeconds: 90),
        ]
        #expect(try Self.reloaded(job).frequencyCaps == job.frequencyCaps)
        #expect(try Self.reloaded(job.stamped(at: Date())).frequencyCaps == job.frequencyCaps)
        let broken = job.jsonText.replacingOccurrences(of: "marketing:3/1d", with: "marketing:3/fortnight")
        #expect(Self.error(broken)?.description.contains("frequencyCaps[0]") == true)
    }

    @Test("frequency caps read as the configuration writes them, and their windows are fixed from 1970 UTC")
    func frequencyCapSyntax() throws {
        #expect(try FrequencyCap(parsing: "marketing:3/day") == FrequencyCap(category: "marketing", limit: 3, periodSeconds: 86_400))
        #expect(try FrequencyCap(parsing: "*:10/1d") == FrequencyCap(category: nil, limit: 10, periodSeconds: 86_400))
        #expect(try FrequencyCap(parsing: " 2/12h ") == FrequencyCap(category: nil, limit: 2, periodSeconds: 43_200))
        for bad in ["3", "x/day", "0/day", "3/", "3/0d", "3/367d", "a b:3/day", "3/day/2"] {
            #expect(throws: FrequencyCapSyntaxError.self, "\(bad)") { try FrequencyCap(parsing: bad) }
        }
        let day = FrequencyCap(category: nil, limit: 1, periodSeconds: 86_400)
        let noon = Date(timeIntervalSince1970: 100 * 86_400 + 43_200)
        let window = day.window(at: noon)
        let dayStart: Int64 = 100 * 86_400 * 1_000_000
        #expect(window.start == dayStart && window.end == dayStart + 86_400 * 1_000_000)
        let mandatory = try PreferenceCategory(name: "orders", mode: .mandatory)
        let social = try PreferenceCategory(name: "social", mode: .on)
        let caps = [day, FrequencyCap(category: "social", limit: 1, periodSeconds: 3_600)]
        #expect(FrequencyCap.applying(caps, category: mandatory, pushType: .alert).isEmpty)
        #expect(FrequencyCap.applying(caps, category: social, pushType: .background).isEmpty)
        #expect(FrequencyCap.applying(caps, category: social, pushType: .alert) == caps)
        #expect(FrequencyCap.applying(caps, category: nil, pushType: .alert) == [day])
    }

    @Test("a localTime schedule keeps its wall-clock time and the zone of devices without one")
    func localTime() throws {
        let local = try #require(LocalDateTime("2026-12-24T09:00"))
        let schedule = SendSchedule.localTime(local, unsetZone: try #require(TimeZone(identifier: "Europe/Paris")))
        let job = Self.job(schedule: schedule, notifications: ["": try Self.prepared(Payload(aps: APS(alert: .body("x"))))])
        #expect(try Self.reloaded(job).schedule == schedule)
        let stored = try JSONValue(parsing: job.jsonText)
        #expect(stored["localTime"] == "2026-12-24T09:00:00" && stored["timeZone"] == "Europe/Paris")
    }

    @Test("a localized send keeps each language's notification, the default among them")
    func localized() throws {
        var notifications: [String: PreparedNotification] = [:]
        for (language, title) in [("", "Hello"), ("fr", "Bonjour"), ("de-ch", "Grüezi")] {
            notifications[language] = try Self.prepared(
                Payload(aps: APS(alert: .content(AlertContent(title: title, body: "…"))), custom: ["herald": ["send": "x"]]))
        }
        let loaded = try Self.reloaded(Self.job(notifications: notifications))
        #expect(Set(loaded.notifications.keys) == ["", "fr", "de-ch"])
        for (language, notification) in notifications {
            #expect(loaded.notifications[language] == notification, "\(language)")
        }
        let french = try Payload(jsonBytes: try #require(loaded.notifications["fr"]).body)
        #expect(french.aps.alert?.content.title == "Bonjour")
    }

    @Test("an encrypted send keeps the sealed body: it opens with the key of its acceptance, and no other")
    func encrypted() throws {
        let (k1, k2) = (try ContentEncryptionKey.generate(id: "k1"), try ContentEncryptionKey.generate(id: "k2"))
        let sealed = try Payload(aps: APS(alert: .content(AlertContent(title: "Secret", body: "meet at 9"))))
            .encryptingContent(with: k1)
        let loaded = try Self.reloaded(Self.job(notifications: ["": try Self.prepared(sealed)]))
        let received = try Payload(jsonBytes: try #require(loaded.notifications[""]).body)
        #expect(received.hasEncryptedContent)
        #expect(
            try received.decryptingContent(using: [k1]).aps.alert
                == .content(AlertContent(title: "Secret", body: "meet at 9")))
        #expect(throws: ContentEnvelopeError.self) { try received.decryptingContent(using: [k2]) }
    }

    @Test("a Live Activity payload Herald stamped is stamped again with the time it is sent; another is left alone")
    func stamping() throws {
        let accepted = Int(Self.start.timeIntervalSince1970)
        let payload = Payload(
            aps: APS(contentState: ["score": "0-0"], timestamp: accepted, event: .update))
        let notification = try Self.prepared(payload, pushType: .liveactivity, priority: .considerPower)
        let job = Self.job(
            query: DeviceQuery.activity("match-9").inTopic(Self.app).kinds([.liveActivity]), pushType: .liveactivity,
            notifications: ["": notification], stampsTimestamp: true)
        let sent = Self.start.addingTimeInterval(19 * 3600)
        let stamped = try Self.reloaded(job).stamped(at: sent)
        let body = try #require(stamped.notifications[""]).body
        let aps = try #require(try JSONValue(parsing: body)["aps"])
        #expect(aps["timestamp"] == .integer(Int(sent.timeIntervalSince1970)), "\(aps)")
        #expect(aps["content-state"]?["score"] == "0-0" && aps["event"] == "update")
        #expect(body.count == notification.body.count, "as large as the body checked at acceptance")
        #expect(stamped.notifications[""]?.priority == .considerPower && stamped.stampsTimestamp)

        let given = Self.job(pushType: .liveactivity, notifications: ["": notification], stampsTimestamp: false)
        #expect(try Self.reloaded(given).stamped(at: sent) == given, "a timestamp the sender gave is kept")
    }

    @Test("a broadcast's job reads back whole, its request id the send's, and is stamped with the time it is sent")
    func broadcast() throws {
        let prepared = try BroadcastNotification(
            body: .payload(Payload(aps: APS(contentState: ["score": "1-0"], timestamp: 1_767_225_600, event: .update))),
            bundleID: Self.app, priority: .considerPower, expiration: APNSExpiration(secondsSince1970: 1_767_230_000),
            requestID: APNSID(Self.sendID.uuid)
        ).prepare()
        let job = BroadcastJob(
            channelID: "dHN0LTI=", bundleID: Self.app, environment: .production, event: "update",
            sendAt: Self.start.addingTimeInterval(3600), notification: prepared, stampsTimestamp: true)
        guard case .broadcast(let loaded) = try StoredJob(jsonText: job.jsonText, sendID: Self.sendID) else {
            Issue.record("not read back as a broadcast")
            return
        }
        #expect(loaded == job)
        let stamped = loaded.stamped(at: Self.start.addingTimeInterval(3600))
        let aps = try #require(try JSONValue(parsing: stamped.notification.body)["aps"])
        #expect(aps["timestamp"] == .integer(1_767_229_200) && aps["content-state"]?["score"] == "1-0")
        #expect(stamped.notification.requestID == APNSID(Self.sendID.uuid))
    }

    @Test("the stored text is stable: version 2, members in name order, the same for the same job")
    func stableText() throws {
        let job = Self.job(notifications: ["": try Self.prepared(Payload(aps: APS(alert: .body("x"))))])
        #expect(job.jsonText == job.jsonText)
        #expect(job.jsonText.hasPrefix(#"{"app":"com.example.app","kind":"send","notifications":{"":{"body":""#))
        let stored = try JSONValue(parsing: job.jsonText)
        #expect(stored["v"] == 2 && stored["query"]?["select"] == ["user": "alice"])
    }

    @Test(
        "a job without a version, or with version 1 or a target, is a version-1 request body for the server to parse",
        arguments: [
            #"{"target": {"user": "alice"}, "alert": "hi"}"#,
            #"{"v": 1, "target": {"user": "alice"}, "alert": "hi"}"#,
            #"{"v": 3, "target": {"user": "alice"}, "alert": "a request that had a v of its own"}"#,
            #"{"broadcast": {"contentState": {}, "channel": "c"}}"#,
        ])
    func versionOne(text: String) throws {
        guard case .requestBody(let value) = try StoredJob(jsonText: text, sendID: Self.sendID) else {
            Issue.record("not a request body")
            return
        }
        #expect(value == (try JSONValue(parsing: text)))
    }

    @Test("a job from a newer server says which version it is and to upgrade")
    func newer() throws {
        let error = try #require(Self.error(#"{"v": 3, "kind": "send"}"#))
        #expect(error.code == .newerVersion && error.sendID == Self.sendID)
        #expect(
            error.description
                == "The stored job of send 019b76da-a800-7eaf-8914-704d34167a6b is version 3, newer than this server (reads up to 2): upgrade the server that runs it."
        )
    }

    @Test(
        "a damaged job says what is wrong with it, by its path, and to send again",
        arguments: [
            ("not json", "it is not JSON"),
            ("[1, 2]", "it is an array, not an object"),
            (#"{"v": "2", "kind": "send"}"#, #"its version "v" is "2", not a whole number from 1"#),
            (#"{"v": 0}"#, #"its version "v" is 0, not a whole number from 1"#),
            (#"{"v": 2}"#, #""kind" is missing"#),
            (#"{"v": 2, "kind": "campaign"}"#, #""kind" is "campaign", not send or broadcast"#),
        ])
    func damaged(text: String, problem: String) throws {
        let error = try #require(Self.error(text))
        #expect(error.code == .unreadable)
        #expect(error.message.hasPrefix("The stored job of send \(Self.sendID) cannot be read: \(problem)"), "\(error)")
        #expect(error.message.hasSuffix("It was damaged or changed outside Herald, so the send cannot run: send it again."))
    }

    @Test(
        "a version-2 send job with a member missing or mistyped names it",
        arguments: [
            ("query.select", #""query.select" is missing"#),
            ("query.select.user", #""query.select" must have exactly one of tokens, user, tag, activity, everyDevice"#),
            ("notifications..body", #""notifications..body" is missing"#),
            ("rate=0", #""rate" is 0, not a whole number from 1"#),
            ("pushType=carrier-pigeon", #""pushType" is "carrier-pigeon", not a push type"#),
            ("notifications..body=!!", #""notifications..body" is not base64"#),
            ("notifications.", #""notifications" has no default notification (the key "")"#),
            ("localTime=9am", #""localTime" is not a date and wall-clock time"#),
        ])
    func damagedMember(change: String, problem: String) throws {
        let job = Self.job(rate: 5, notifications: ["": try Self.prepared(Payload(aps: APS(alert: .body("x"))))])
        let text = Self.changing(try JSONValue(parsing: job.jsonText), change).jsonString
        let error = try #require(Self.error(text), "\(text)")
        #expect(error.code == .unreadable)
        #expect(error.message.contains("cannot be read: \(problem)"), "\(error)")
    }

    /// The stored object with one member removed (`path`) or replaced (`path=value`, a string or an integer); a path's
    /// parts are split on dots, so `notifications..body` is the default notification's body.
    static func changing(_ value: JSONValue, _ change: String) -> JSONValue {
        let parts = change.split(separator: "=", maxSplits: 1).map(String.init)
        let path = parts[0].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        // Not `nil`: JSONValue is ExpressibleByNilLiteral, so that would store a JSON null.
        let replacement: JSONValue? =
            parts.count == 2 ? (Int(parts[1]).map(JSONValue.integer) ?? .string(parts[1])) : Optional.none
        func apply(_ value: JSONValue, _ path: ArraySlice<String>) -> JSONValue {
            guard case .object(var members) = value, let name = path.first else { return value }
            if path.count == 1 {
                members[name] = replacement
            } else if let inner = members[name] {
                members[name] = apply(inner, path.dropFirst())
            }
            return .object(members)
        }
        return apply(value, path[...])
    }
}
