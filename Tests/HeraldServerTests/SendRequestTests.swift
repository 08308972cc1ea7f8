import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// The typed way in (issue 43, item 1): `POST /api/send`'s body decodes into the ``SendRequest`` a caller could have
/// built, and the Live Activity commands build their sends without writing an API body.
@Suite("Sends: the typed request")
struct SendRequestTests {
    static let topic = ServerHarness.topic
    static let apps = AppDirectory([AppConfiguration(bundleID: topic)])
    static let now = Date(timeIntervalSince1970: 1_796_112_000)

    static func decode(_ body: String) throws -> SendRequest {
        try SendRequest(json: JSONValue(parsing: Array(body.utf8)))
    }

    @Test("a body decodes into the request built by hand, field for field")
    func decodesToTyped() throws {
        let token = testToken(0x51)
        var typed = SendRequest(
            target: .tokens([token]), topic: Self.topic,
            content: .typed(
                Payload(
                    aps: APS(
                        alert: .content(AlertContent(title: "Hi", body: "there")), badge: 3, sound: "default",
                        threadID: "t", interruptionLevel: .timeSensitive, filterCriteria: "work"),
                    custom: ["order": "A-1"])))
        typed.environment = .production
        typed.localizations = ["fr": .body("salut")]
        typed.priority = .considerPower
        typed.expiration = APNSExpiration(secondsSince1970: 0)
        typed.collapseID = "c"
        typed.schedule = .at(Self.now.addingTimeInterval(3600))
        typed.rate = 50
        typed.preferenceCategory = "news"
        typed.frequencyCap = false
        typed.quietHours = .drop
        let body = """
            {"target": {"tokens": ["\(token.hex)"]}, "topic": "\(Self.topic)", "environment": "production",
             "alert": {"title": "Hi", "body": "there"}, "badge": 3, "sound": "default", "threadId": "t",
             "interruptionLevel": "time-sensitive", "filterCriteria": "work", "data": {"order": "A-1"}, "localizations": {"FR": "salut"},
             "priority": 5, "expiration": 0, "collapseId": "c", "sendAt": "\(RFC3339.string(Self.now.addingTimeInterval(3600)))",
             "rate": 50, "preferenceCategory": "news", "frequencyCap": false, "quietHours": "drop"}
            """
        #expect(try Self.decode(body) == typed)
        typed.preferenceCategory = nil
        let plan = try SendPlan(typed, apps: Self.apps, sendID: SendID(), at: Self.now)
        let sent = String(decoding: try #require(plan.preparedVariants[""]).body, as: UTF8.self)
        #expect(sent.contains(#""filter-criteria":"work""#), "\(sent)")

        var raw = SendRequest(target: .everyDevice, topic: Self.topic, content: .raw(["aps": .object(["badge": 1])]))
        raw.pushType = .background
        #expect(
            try Self.decode(#"{"target": {"topic": "\#(Self.topic)"}, "payload": {"aps": {"badge": 1}}, "pushType": "background"}"#)
                == raw)
    }

    @Test("a decoding error names its field", arguments: [
        (#"[]"#, "invalidJSON", "array"),
        (#"{"alert": "x"}"#, "missingTarget", "target"),
        (#"{"target": {"user": "a", "tag": "b"}, "alert": "x"}"#, "invalidField", "exactly one"),
        (#"{"target": {"usr": "a"}, "alert": "x"}"#, "invalidField", "exactly one"),
        (#"{"target": {"tokens": ["ab"]}, "alert": "x"}"#, "badDeviceToken", "target.tokens[0]"),
        (#"{"target": {"topic": "a.b"}, "topic": "c.d", "alert": "x"}"#, "invalidField", "every device of a.b"),
        (#"{"target": {"user": "a"}, "payload": {"aps": {}}, "badge": 1}"#, "invalidField", "badge"),
        (#"{"target": {"user": "a"}, "priority": 7}"#, "BadPriority", "7"),
        (#"{"target": {"user": "a"}, "pushType": "mdm"}"#, "InvalidPushType", "mdm"),
        (#"{"target": {"user": "a"}, "quietHours": "later"}"#, "invalidField", "quietHours"),
        (#"{"target": {"user": "a"}, "localizations": {"not a tag": "x"}}"#, "invalidField", "not a tag"),
        (#"{"target": {"user": "a"}, "sendAt": "tomorrow"}"#, "invalidField", "sendAt"),
        (#"{"target": {"user": "a"}, "filterCriteria": ""}"#, "invalidField", "filterCriteria"),
        (#"{"target": {"user": "a"}, "payload": {"aps": {}}, "filterCriteria": "work"}"#, "invalidField", "filterCriteria"),
    ])
    func decodingErrors(body: String, reason: String, words: String) throws {
        let error = try #require(throws: APIError.self) { try Self.decode(body) }
        #expect(error.reason == reason && error.message.contains(words), "\(error.message)")
    }

    @Test("composition checks what needs the app and APNs's rules: a type narrows only a liveactivity push; a passed time")
    func compositionErrors() throws {
        var request = SendRequest(target: .user("a"), topic: Self.topic, content: .typed(Payload(aps: APS(alert: .body("x")))))
        request.activityType = "DeliveryAttributes"
        let narrowing = try #require(throws: APIError.self) {
            try SendPlan(request, apps: Self.apps, sendID: SendID(), at: Self.now)
        }
        #expect(narrowing.reason == "invalidField" && narrowing.message.contains("activityType"))
        request.activityType = nil
        request.schedule = .at(Self.now.addingTimeInterval(-3600))
        let passed = try #require(throws: APIError.self) {
            try SendPlan(request, apps: Self.apps, sendID: SendID(), at: Self.now)
        }
        #expect(passed.message.contains("has passed"), "\(passed.message)")
        // A worker that reads a stored request again does not hold its time against it.
        _ = try SendPlan(request, apps: Self.apps, sendID: SendID(), at: Self.now, resumed: true)
    }

    @Test("a Live Activity start is a liveactivity send to the push-to-start tokens of its type, at priority 10")
    func activityStart() throws {
        let start = try ActivityStart(
            json: JSONFields(
                try JSONValue(
                    parsing: Array(
                        #"{"activityId": "order-1", "activityType": "DeliveryAttributes", "target": {"user": "ann"}, "attributes": {"id": 1}, "contentState": {"eta": 5}, "alert": {"title": "T", "body": "B"}, "environment": "development"}"#
                            .utf8)
                ).objectValue!))
        let request = start.sendRequest
        #expect(request.pushType == .liveactivity && request.activityType == "DeliveryAttributes")
        #expect(request.priority == .immediate && request.environment == .development && request.target == .user("ann"))
        guard case .raw(let payload) = request.content, case .object(let aps)? = payload["aps"] else {
            Issue.record("not a raw payload: \(request.content)")
            return
        }
        #expect(aps["event"] == "start" && aps["attributes-type"] == "DeliveryAttributes" && aps["input-push-token"] == 1)
        #expect(aps["content-state"] == .object(["eta": 5]) && aps["attributes"] == .object(["id": 1]))
        let plan = try SendPlan(request, apps: Self.apps, sendID: SendID(), at: Self.now)
        #expect(plan.query.tokenKinds == [.liveActivityStart] && plan.query.activityType == "DeliveryAttributes")
        #expect(plan.job.stampsTimestamp)
    }

    @Test("an update goes at 5 unless it has an alert; an end at 10 with its dismissal date; force needs priority 10")
    func activityChanges() throws {
        func fields(_ text: String) throws -> JSONFields {
            JSONFields(try JSONValue(parsing: Array(text.utf8)).objectValue!)
        }
        let quiet = try ActivityChange(.update, json: fields(#"{"contentState": {"eta": 4}}"#))
        #expect(quiet.sendRequest(activity: "o").priority == .considerPower)
        let loud = try ActivityChange(.update, json: fields(#"{"contentState": {"eta": 1}, "alert": "Soon"}"#))
        #expect(loud.sendRequest(activity: "o").priority == .immediate)
        #expect(loud.sendRequest(activity: "o").target == .activity("o"))
        let end = try ActivityChange(.end, json: fields(#"{"dismissalDate": 1796115600}"#))
        let ending = end.sendRequest(activity: "o")
        #expect(ending.priority == .immediate)
        guard case .raw(let payload) = ending.content, case .object(let aps)? = payload["aps"] else {
            Issue.record("not a raw payload")
            return
        }
        #expect(aps["event"] == "end" && aps["dismissal-date"] == 1_796_115_600 && aps["content-state"] == .object([:]))
        let error = try #require(throws: APIError.self) {
            try ActivityChange(.update, json: fields(#"{"contentState": {}, "force": true}"#))
        }
        #expect(error.message.contains("force"))
        #expect(throws: APIError.self) { try ActivityChange(.update, json: fields(#"{"alert": "no state"}"#)) }
    }
}
