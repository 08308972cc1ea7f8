import Foundation
import HeraldClient
import HeraldCore
import Testing

/// The app's own types, as a delivery app would declare them in its `ActivityAttributes`.
private struct DeliveryAttributes: Decodable, Equatable {
    struct ContentState: Decodable, Equatable {
        var status: String
        var eta: Date
        var stops: [Int]
    }
    var orderNumber: String
    var restaurant: String
}

@Suite("Live Activity payloads")
struct LiveActivityPayloadTests {
    static let start = #"""
        {"aps":{"timestamp":1767225600,"event":"start",
          "content-state":{"status":"preparing","eta":788918400,"stops":[3,1]},
          "attributes-type":"DeliveryAttributes","attributes":{"orderNumber":"A-1042","restaurant":"Chez Léon"},
          "alert":{"title":{"loc-key":"DELIVERY_STARTED","loc-args":["A-1042"]},"body":"Your order is being prepared.",
                   "sound":"chime.caf"},
          "relevance-score":50,"input-push-token":1},
         "herald":"8d2b0a70-3c1e-4c57-9f2e-0b7f7c1e2a11"}
        """#

    @Test("a start push gives its event, times, alert, attributes and the app's typed state")
    func start() throws {
        let push = try LiveActivityPayload(jsonBytes: Array(Self.start.utf8))
        #expect(push.event == .start)
        #expect(push.timestamp == Date(timeIntervalSince1970: 1_767_225_600))
        #expect(push.attributesType == "DeliveryAttributes")
        #expect(push.inputPushToken && push.inputPushChannel == nil)
        #expect(push.relevanceScore == 50)
        #expect(push.alert?.content.title == .localized(key: "DELIVERY_STARTED", arguments: ["A-1042"]))
        #expect(push.alert?.content.sound == "chime.caf")
        #expect(push.custom["herald"] == "8d2b0a70-3c1e-4c57-9f2e-0b7f7c1e2a11")
        #expect(push.staleDate == nil && push.dismissalDate == nil)

        let attributes = try push.decodeAttributes(as: DeliveryAttributes.self)
        #expect(attributes == DeliveryAttributes(orderNumber: "A-1042", restaurant: "Chez Léon"))
        let state = try push.decodeContentState(as: DeliveryAttributes.ContentState.self)
        #expect(state.status == "preparing" && state.stops == [3, 1])
        // ActivityKit's default JSONDecoder: dates count from 2001-01-01, so 788918400 is 2026-01-01.
        #expect(state.eta == Date(timeIntervalSinceReferenceDate: 788_918_400))
        #expect(state.eta == Date(timeIntervalSince1970: 1_767_225_600))
    }

    @Test("an update push with a stale date and an alert, and an end push with a dismissal date")
    func updateAndEnd() throws {
        let update = try LiveActivityPayload(
            jsonBytes: Array(
                #"{"aps":{"timestamp":1767226200,"event":"update","content-state":{"status":"on the way","eta":788919000,"stops":[1]},"stale-date":1767229800,"alert":{"title":"On the way","body":"Your rider left the restaurant."}}}"#
                    .utf8))
        #expect(update.event == .update && update.staleDate == Date(timeIntervalSince1970: 1_767_229_800))
        #expect(update.alert?.content.body == "Your rider left the restaurant.")
        #expect(update.attributes == nil)
        #expect(try update.decodeContentState(as: DeliveryAttributes.ContentState.self).status == "on the way")
        #expect {
            try update.decodeAttributes(as: DeliveryAttributes.self)
        } throws: { ($0 as? NotificationDecodingError)?.code == .invalidLiveActivity }

        let end = try LiveActivityPayload(
            jsonBytes: Array(
                #"{"aps":{"timestamp":1767228000,"event":"end","content-state":{"status":"delivered","eta":788920800,"stops":[]},"dismissal-date":1767231600}}"#
                    .utf8))
        #expect(end.event == .end && end.dismissalDate == Date(timeIntervalSince1970: 1_767_231_600))
        #expect(end.alert == nil && end.relevanceScore == nil && !end.inputPushToken)
        #expect(end.contentState["status"] == "delivered")
    }

    @Test("the decoded Live Activity push and core's payload agree on every key")
    func buildsOnCore() throws {
        let payload = try Payload(jsonString: Self.start)
        let push = try LiveActivityPayload(payload)
        let fromBytes = try LiveActivityPayload(jsonBytes: Array(Self.start.utf8))
        #expect(push == fromBytes)
        #expect(push.contentState == .object(try #require(payload.aps.contentState)))
        #expect(push.attributes == payload.aps.attributes.map(JSONValue.object))
    }

    @Test(
        "malformed pushes are refused with the field at fault, never a crash",
        arguments: [
            ("not JSON", #"{"aps":"#, NotificationDecodingError.Code.invalidPayload, "payload"),
            ("an array", #"[1,2]"#, .invalidPayload, "payload"),
            ("aps a string", #"{"aps":"update"}"#, .invalidPayload, "aps"),
            (
                "timestamp a string", #"{"aps":{"event":"update","timestamp":"soon","content-state":{}}}"#,
                .invalidPayload, "aps.timestamp"
            ),
            (
                "timestamp fractional", #"{"aps":{"event":"update","timestamp":1.5,"content-state":{}}}"#,
                .invalidPayload, "aps.timestamp"
            ),
            (
                "content-state an array", #"{"aps":{"event":"update","timestamp":1,"content-state":[1]}}"#,
                .invalidPayload, "aps.content-state"
            ),
            ("unknown event", #"{"aps":{"event":"pause","timestamp":1,"content-state":{}}}"#, .invalidPayload, "aps.event"),
            (
                "stale-date a string", #"{"aps":{"event":"update","timestamp":1,"content-state":{},"stale-date":"later"}}"#,
                .invalidPayload, "aps.stale-date"
            ),
            (
                "relevance-score a string",
                #"{"aps":{"event":"update","timestamp":1,"content-state":{},"relevance-score":"high"}}"#, .invalidPayload,
                "aps.relevance-score"
            ),
            (
                "input-push-token 2",
                #"{"aps":{"event":"start","timestamp":1,"content-state":{},"input-push-token":2}}"#, .invalidPayload,
                "aps.input-push-token"
            ),
            ("an ordinary alert", #"{"aps":{"alert":"Hello"}}"#, .invalidLiveActivity, "aps.event"),
            ("no timestamp", #"{"aps":{"event":"update","content-state":{}}}"#, .invalidLiveActivity, "aps.timestamp"),
            ("no content-state", #"{"aps":{"event":"end","timestamp":1}}"#, .invalidLiveActivity, "aps.content-state"),
            (
                "start without attributes-type",
                #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes":{},"alert":"Hi"}}"#,
                .invalidLiveActivity, "aps.attributes-type"
            ),
            (
                "start without an alert",
                #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#,
                .invalidLiveActivity, "aps.alert"
            ),
            (
                "dismissal-date on an update",
                #"{"aps":{"event":"update","timestamp":1,"content-state":{},"dismissal-date":2}}"#, .invalidLiveActivity,
                "aps.dismissal-date"
            ),
        ] as [(String, String, NotificationDecodingError.Code, String)])
    func malformed(name: String, json: String, code: NotificationDecodingError.Code, path: String) {
        #expect {
            try LiveActivityPayload(jsonBytes: Array(json.utf8))
        } throws: { error in
            guard let error = error as? NotificationDecodingError else { return false }
            return error.code == code && error.path == path && !error.message.isEmpty
        }
    }

    @Test(
        "a content-state that is not the app's ContentState names the key that does not fit",
        arguments: [
            (#"{"status":"preparing","stops":[]}"#, "aps.content-state.eta", "missing"),
            (#"{"status":7,"eta":0,"stops":[]}"#, "aps.content-state.status", "is not"),
            (#"{"status":"x","eta":0,"stops":[1,"two"]}"#, "aps.content-state.stops[1]", "is not"),
            (#"{"status":null,"eta":0,"stops":[]}"#, "aps.content-state.status", "null"),
            // ActivityKit would not decode an ISO 8601 date either: its decoder uses the default date strategy.
            (#"{"status":"x","eta":"2026-01-01T00:00:00Z","stops":[]}"#, "aps.content-state.eta", "is not"),
        ])
    func contentStateMismatch(state: String, path: String, words: String) throws {
        let push = try LiveActivityPayload(
            jsonBytes: Array(#"{"aps":{"event":"update","timestamp":1,"content-state":\#(state)}}"#.utf8))
        #expect {
            try push.decodeContentState(as: DeliveryAttributes.ContentState.self)
        } throws: { error in
            guard let error = error as? NotificationDecodingError else { return false }
            return error.code == .decodingFailed && error.path == path && error.message.contains(words)
                && error.message.contains("ContentState")
        }
    }
}
