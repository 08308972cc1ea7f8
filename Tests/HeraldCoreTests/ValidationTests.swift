import HeraldCore
import Testing

/// One validation rule seen from both sides: a notification that passes and one that fails.
struct ValidationCase: CustomTestStringConvertible, Sendable {
    let rule: String
    let passing: PushNotification
    let failing: PushNotification
    let field: String
    let reason: APNSReason?
    var testDescription: String { rule }
}

private func raw(_ json: String, _ type: APNSPushType = .alert, topic: String = "com.example.app",
                 priority: APNSPriority? = nil, collapseID: String? = nil) -> PushNotification {
    PushNotification(body: .raw(Array(json.utf8)), pushType: type, topic: topic, priority: priority, collapseID: collapseID)
}

private let hello = #"{"aps":{"alert":"Hello"}}"#
private func padded(to size: Int) -> String {
    let skeleton = #"{"aps":{"alert":"Hi"},"pad":""}"#
    return #"{"aps":{"alert":"Hi"},"pad":""# + String(repeating: "x", count: size - skeleton.utf8.count) + #""}"#
}
private let live = #""timestamp":1767225600,"content-state":{"s":1}"#

@Suite("Validation before sending")
struct ValidationTests {
    static let cases: [ValidationCase] = [
        ValidationCase(rule: "payload must not be empty", passing: raw(hello), failing: raw(""), field: "payload", reason: .payloadEmpty),
        ValidationCase(rule: "4,096 bytes for alert pushes", passing: raw(padded(to: 4096)), failing: raw(padded(to: 4097)), field: "payload", reason: .payloadTooLarge),
        ValidationCase(rule: "5,120 bytes for VoIP pushes", passing: raw(padded(to: 5120), .voip, topic: "com.example.app.voip"), failing: raw(padded(to: 5121), .voip, topic: "com.example.app.voip"), field: "payload", reason: .payloadTooLarge),
        ValidationCase(rule: "payload must be JSON", passing: raw(hello), failing: raw(#"{"aps":"#), field: "payload", reason: .badRequestPayload),
        ValidationCase(rule: "payload must be an object", passing: raw(hello), failing: raw(#""hello""#), field: "payload", reason: .badRequestPayload),
        ValidationCase(rule: "background pushes need priority 5", passing: raw(#"{"aps":{"content-available":1}}"#, .background, priority: .considerPower), failing: raw(#"{"aps":{"content-available":1}}"#, .background, priority: .immediate), field: "apns-priority", reason: .badPriority),
        ValidationCase(rule: "background pushes without a priority header default to 10", passing: raw(#"{"aps":{"content-available":1}}"#, .background, priority: .considerPower), failing: raw(#"{"aps":{"content-available":1}}"#, .background), field: "apns-priority", reason: .badPriority),
        ValidationCase(rule: "content-available-only payloads need push type background", passing: raw(#"{"aps":{"content-available":1}}"#, .background, priority: .considerPower), failing: raw(#"{"aps":{"content-available":1}}"#, .alert), field: "apns-push-type", reason: nil),
        ValidationCase(rule: "background pushes must not alert", passing: raw(#"{"aps":{"content-available":1}}"#, .background, priority: .considerPower), failing: raw(#"{"aps":{"content-available":1,"alert":"Hi"}}"#, .background, priority: .considerPower), field: "apns-push-type", reason: nil),
        ValidationCase(rule: "background pushes need content-available", passing: raw(#"{"aps":{"content-available":1},"k":1}"#, .background, priority: .considerPower), failing: raw(#"{"aps":{},"k":1}"#, .background, priority: .considerPower), field: "aps.content-available", reason: nil),
        ValidationCase(rule: "alert pushes need something visible", passing: raw(#"{"aps":{"badge":0}}"#), failing: raw(#"{"aps":{"alert":{}},"k":1}"#), field: "aps", reason: nil),
        ValidationCase(rule: "critical volume is 0…1", passing: raw(#"{"aps":{"alert":"x","sound":{"critical":1,"name":"default","volume":1.0}}}"#), failing: raw(#"{"aps":{"alert":"x","sound":{"critical":1,"name":"default","volume":1.5}}}"#), field: "aps.sound.volume", reason: nil),
        ValidationCase(rule: "critical volume inside the alert is 0…1", passing: raw(#"{"aps":{"alert":{"title":"x","sound":{"critical":1,"volume":0}}}}"#), failing: raw(#"{"aps":{"alert":{"title":"x","sound":{"critical":1,"volume":-0.5}}}}"#), field: "aps.alert.sound.volume", reason: nil),
        ValidationCase(rule: "relevance-score is 0…1 for notifications", passing: raw(#"{"aps":{"alert":"x","relevance-score":0.9}}"#), failing: raw(#"{"aps":{"alert":"x","relevance-score":1.5}}"#), field: "aps.relevance-score", reason: nil),
        ValidationCase(rule: "relevance-score is any number for Live Activities", passing: raw(#"{"aps":{"event":"update","relevance-score":100,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"alert":"x","relevance-score":100}}"#), field: "aps.relevance-score", reason: nil),
        ValidationCase(rule: "interruption-level has four values", passing: raw(#"{"aps":{"alert":"x","interruption-level":"time-sensitive"}}"#), failing: raw(#"{"aps":{"alert":"x","interruption-level":"urgent"}}"#), field: "aps.interruption-level", reason: nil),
        ValidationCase(rule: "badge is not negative", passing: raw(#"{"aps":{"badge":0}}"#), failing: raw(#"{"aps":{"badge":-1}}"#), field: "aps.badge", reason: nil),
        ValidationCase(rule: "collapse id is at most 64 bytes", passing: raw(hello, collapseID: String(repeating: "c", count: 64)), failing: raw(hello, collapseID: String(repeating: "c", count: 65)), field: "apns-collapse-id", reason: .badCollapseID),
        ValidationCase(rule: "collapse id counts UTF-8 bytes", passing: raw(hello, collapseID: String(repeating: "€", count: 21)), failing: raw(hello, collapseID: String(repeating: "€", count: 22)), field: "apns-collapse-id", reason: .badCollapseID),
        ValidationCase(rule: "topic is required", passing: raw(hello), failing: raw(hello, topic: ""), field: "apns-topic", reason: .missingTopic),
        ValidationCase(rule: "topic is a bundle id", passing: raw(hello, topic: "com.example.my-app_2"), failing: raw(hello, topic: "com example app"), field: "apns-topic", reason: .badTopic),
        ValidationCase(rule: "VoIP pushes need the .voip topic", passing: raw(hello, .voip, topic: "com.example.app.voip"), failing: raw(hello, .voip, topic: "com.example.app"), field: "apns-topic", reason: .deviceTokenNotForTopic),
        ValidationCase(rule: "alert pushes must not use another push type's topic", passing: raw(hello), failing: raw(hello, topic: "com.example.app.voip"), field: "apns-topic", reason: .deviceTokenNotForTopic),
        ValidationCase(rule: "Live Activity pushes need their topic", passing: raw(#"{"aps":{"event":"end","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"end","# + live + "}}", .liveactivity, topic: "com.example.app"), field: "apns-topic", reason: .deviceTokenNotForTopic),
        ValidationCase(rule: "Live Activity pushes use priority 5 or 10", passing: raw(#"{"aps":{"event":"end","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity", priority: .considerPower), failing: raw(#"{"aps":{"event":"end","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity", priority: .prioritizePowerOver), field: "apns-priority", reason: .badPriority),
        ValidationCase(rule: "Live Activity pushes need an event", passing: raw(#"{"aps":{"event":"update","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.event", reason: nil),
        ValidationCase(rule: "Live Activity pushes need a timestamp", passing: raw(#"{"aps":{"event":"update","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","content-state":{}}}"#, .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.timestamp", reason: nil),
        ValidationCase(rule: "Live Activity pushes need content-state", passing: raw(#"{"aps":{"event":"update","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","timestamp":1}}"#, .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.content-state", reason: nil),
        ValidationCase(rule: "starting a Live Activity needs an alert", passing: raw(#"{"aps":{"event":"start","attributes-type":"A","attributes":{},"alert":{"title":"T","body":"B"},"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"start","attributes-type":"A","attributes":{},"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.alert", reason: nil),
        ValidationCase(rule: "starting a Live Activity needs attributes", passing: raw(#"{"aps":{"event":"start","attributes-type":"A","attributes":{},"alert":"Go","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"start","attributes-type":"A","alert":"Go","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.attributes", reason: nil),
        ValidationCase(rule: "dismissal-date only with end", passing: raw(#"{"aps":{"event":"end","dismissal-date":1767229200,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","dismissal-date":1767229200,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.dismissal-date", reason: nil),
        ValidationCase(rule: "Live Activity timestamps are seconds, not milliseconds", passing: raw(#"{"aps":{"event":"update","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","timestamp":1767225600000,"content-state":{}}}"#, .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.timestamp", reason: nil),
        ValidationCase(rule: "stale-date is seconds, not milliseconds", passing: raw(#"{"aps":{"event":"update","stale-date":1767229200,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","stale-date":1767229200000,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.stale-date", reason: nil),
        ValidationCase(rule: "stale-date comes after the push's timestamp (else the activity is out of date on arrival)", passing: raw(#"{"aps":{"event":"update","stale-date":1767225601,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","stale-date":1767225600,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.stale-date", reason: nil),
        ValidationCase(rule: "dismissal-date is seconds; a past one is allowed (it dismisses at once)", passing: raw(#"{"aps":{"event":"end","dismissal-date":1,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"end","dismissal-date":1767229200000,"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.dismissal-date", reason: nil),
        ValidationCase(rule: "Live Activity dates are not negative", passing: raw(#"{"aps":{"event":"update","# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","timestamp":-5,"content-state":{}}}"#, .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.timestamp", reason: nil),
        ValidationCase(rule: "attributes-type is a type name", passing: raw(#"{"aps":{"event":"start","attributes-type":"DeliveryAttributes","attributes":{},"alert":{"title":"T","body":"B"},"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"start","attributes-type":"Delivery Attributes","attributes":{},"alert":{"title":"T","body":"B"},"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.attributes-type", reason: nil),
        ValidationCase(rule: "a Live Activity alert with a sound needs a title", passing: raw(#"{"aps":{"event":"update","alert":{"title":"Delayed","body":"10 min","sound":"default"},"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), failing: raw(#"{"aps":{"event":"update","alert":{"body":"10 min","sound":"default"},"# + live + "}}", .liveactivity, topic: "com.example.app.push-type.liveactivity"), field: "aps.alert.title", reason: nil),
        ValidationCase(rule: "Live Activity keys need push type liveactivity", passing: raw(#"{"aps":{"alert":"x"}}"#), failing: raw(#"{"aps":{"alert":"x","event":"update","# + live + "}}"), field: "apns-push-type", reason: nil),
        ValidationCase(rule: "widget pushes carry content-changed", passing: raw(#"{"aps":{"content-changed":true}}"#, .widgets, topic: "com.example.app.push-type.widgets"), failing: raw(#"{"aps":{}}"#, .widgets, topic: "com.example.app.push-type.widgets"), field: "aps.content-changed", reason: nil),
        ValidationCase(rule: "MDM pushes carry the PushMagic", passing: raw(#"{"mdm":"magic"}"#, .mdm, topic: "com.apple.mgmt.External.1234"), failing: raw(#"{"aps":{}}"#, .mdm, topic: "com.apple.mgmt.External.1234"), field: "mdm", reason: nil),
    ]

    @Test("each rule accepts the right notification and rejects the wrong one", arguments: cases)
    func rule(_ testCase: ValidationCase) throws {
        _ = try testCase.passing.prepare()
        #expect {
            try testCase.failing.prepare()
        } throws: { error in
            guard let error = error as? NotificationValidationError else { return false }
            return error.field == testCase.field && error.reason == testCase.reason && !error.message.isEmpty
        }
    }

    @Test("prepare encodes typed payloads once and keeps raw bytes unchanged")
    func prepared() throws {
        let typed = PushNotification(Payload(alert: AlertContent(title: "Hi", body: "There")), topic: "com.example.app",
                                     priority: .immediate, collapseID: "c1", apnsID: APNSID())
        let prepared = try typed.prepare()
        #expect(try Payload(jsonBytes: prepared.body) == Payload(alert: AlertContent(title: "Hi", body: "There")))
        #expect(prepared.collapseID == "c1" && prepared.priority == .immediate)
        let rawBytes = Array("{ \"aps\" : { \"alert\" : \"Hello\" } }".utf8)
        #expect(try PushNotification(body: .raw(rawBytes), pushType: .alert, topic: "com.example.app").prepare().body == rawBytes)
    }

    @Test("errors describe the field and the APNs reason")
    func description() {
        #expect {
            try raw(#"{"aps":{"content-available":1}}"#, .background, priority: .immediate).prepare()
        } throws: { error in
            "\(error)".contains("apns-priority") && "\(error)".contains("BadPriority") && "\(error)".contains("5")
        }
    }
}
