import HeraldCore
import Testing

@Suite("Payload encoding")
struct PayloadTests {
    /// Payload examples from apns-protocol.md and the book chapters in shared/seeds, verbatim.
    static let documentedExamples: [String] = [
        // Book: the first push.
        #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"}}}"#,
        // Book: localized keys.
        #"{"aps":{"alert":{"title-loc-key":"FOOD_ORDERED","loc-key":"FOOD_PICKUP_TIME","loc-args":["2018-05-02T19:32:41Z"]}}}"#,
        #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"},"badge":12}}"#,
        #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"},"badge":12,"sound":"filename.caf"}}"#,
        // Book: critical sound.
        #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"},"badge":12,"sound":{"critical":1,"name":"filename.caf","volume":0.75}}}"#,
        // Book: custom keys beside aps.
        #"{"aps":{"alert":{"title":"Save The Princess!"}},"coords":{"latitude":37.33182,"longitude":-122.03118}}"#,
        #"{"aps":{"alert":{"title":"Hello Foreground!","body":"This notification appeared in the foreground."}}}"#,
        #"{"beach":true,"aps":{"alert":{"body":"Tap me!"}}}"#,
        // Book: silent push with custom data.
        #"{"aps":{"content-available":1},"image":"http://dwz.date/dBxF","text":"A nice picture of the Earth"}"#,
        // Book: category for actions.
        #"{"aps":{"alert":{"title":"3D Touch this notification (long-press)"},"category":"AcceptOrReject","sound":"default"}}"#,
        // Protocol §4.5: Live Activity update.
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"score":"2–1","minute":78},"relevance-score":100}}"#,
        // Protocol §8.1: an .apns file.
        #"{"Simulator Target Bundle":"com.example.herald.demo","aps":{"alert":{"title":"Hello","body":"From an .apns file"},"badge":1,"sound":"default"},"orderID":"A-1042"}"#,
        // Protocol §4.6.
        #"{"aps":{"content-changed":true}}"#,
        #"{"container-identifier":"NSFileProviderRootContainerItemIdentifier","domain":"main"}"#,
        #"{"mdm":"5d8d5b0a-d3c5-4d86-9b0e-95d3b2e86a6b"}"#,
        #"{"aps":{}}"#,
        // Protocol §4.3: localized title and body objects with the sound inside alert (Live Activity).
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"score":"3-1"},"alert":{"title":{"loc-key":"GOAL","loc-args":["Herald FC"]},"body":{"loc-key":"SCORE"},"sound":"goal.caf"}}}"#,
        // Legacy alert keys and an aps key Herald does not model are kept.
        #"{"aps":{"alert":{"body":"Hi","action-loc-key":"OPEN","summary-arg":"Ann","summary-arg-count":2},"ptt-push-type":"service-update"}}"#,
    ]

    @Test("documented examples decode and encode back to the same JSON structure", arguments: documentedExamples)
    func documentedRoundTrip(json: String) throws {
        let payload = try Payload(jsonString: json)
        let reencoded = try JSONValue(parsing: payload.jsonBytes())
        #expect(reencoded == (try JSONValue(parsing: json)))
        #expect(try Payload(jsonBytes: payload.jsonBytes()) == payload)
    }

    @Test("typed construction produces the book's payloads")
    func typedMatchesBook() throws {
        var payload = Payload(alert: AlertContent(title: "Your food is done.", body: "Be careful, it's really hot!"))
        payload.aps.badge = 12
        payload.aps.sound = .critical(CriticalSound(name: "filename.caf", volume: 0.75))
        #expect(try JSONValue(parsing: payload.jsonBytes()) == (try JSONValue(parsing: Self.documentedExamples[4])))

        var silent = Payload.background(custom: ["image": "http://dwz.date/dBxF", "text": "A nice picture of the Earth"])
        silent.aps.contentAvailable = true
        #expect(try JSONValue(parsing: silent.jsonBytes()) == (try JSONValue(parsing: Self.documentedExamples[8])))

        let live = Payload(aps: APS(relevanceScore: 100, contentState: ["score": "2–1", "minute": 78],
                                    timestamp: 1_767_225_600, event: .update))
        #expect(try JSONValue(parsing: live.jsonBytes()) == (try JSONValue(parsing: Self.documentedExamples[10])))
    }

    @Test("every key survives a round trip")
    func everyKey() throws {
        let alert = AlertContent(
            title: .text("T"), subtitle: .localized(key: "SUB", arguments: ["x"]), body: .text("B \"quoted\"\n"),
            launchImage: "launch.png", titleLocKey: "TK", titleLocArgs: ["a", "b"], subtitleLocKey: "SK",
            subtitleLocArgs: ["c"], locKey: "LK", locArgs: ["d"], sound: "alert.caf", additional: ["action-loc-key": "GO"])
        let aps = APS(
            alert: .content(alert), badge: 3, sound: .critical(CriticalSound(name: "c.caf", volume: 0.5)),
            threadID: "thread", category: "CAT", contentAvailable: true, mutableContent: true,
            targetContentID: "scene", interruptionLevel: .timeSensitive, relevanceScore: 0.25, filterCriteria: "work",
            staleDate: 1_767_229_200, contentState: ["n": 1, "nested": ["a": [true, nil]]], timestamp: 1_767_225_600,
            event: .start, dismissalDate: 1_767_240_000, attributesType: "MatchAttributes", attributes: ["team": "H"],
            inputPushToken: true, inputPushChannel: "Y2hhbm5lbA==", contentChanged: true, urlArgs: ["a", "b"],
            additional: ["ptt-push-type": "service-update"])
        let payload = Payload(aps: aps, custom: ["orderID": "A-1042", "n": 1.5, "list": [1, "two"], "flag": false])
        let decoded = try Payload(jsonBytes: payload.jsonBytes())
        #expect(decoded == payload)
        let json = try JSONValue(parsing: payload.jsonBytes())
        let apsKeys = Set(json["aps"]?.objectValue?.keys.map { $0 } ?? [])
        #expect(apsKeys.isSuperset(of: [
            "alert", "badge", "sound", "thread-id", "category", "content-available", "mutable-content",
            "target-content-id", "interruption-level", "relevance-score", "filter-criteria", "stale-date",
            "content-state", "timestamp", "event", "dismissal-date", "attributes-type", "attributes",
            "input-push-token", "input-push-channel", "content-changed", "url-args",
        ]))
        #expect(json["aps"]?["alert"]?["subtitle"] == ["loc-key": "SUB", "loc-args": ["x"]])
        #expect(json["aps"]?["content-available"] == 1)
        #expect(try Payload(jsonBytes: Payload(aps: APS(alert: .body("plain"))).jsonBytes()).aps.alert == .body("plain"))
    }

    @Test("wrong types in known keys are named", arguments: [
        (#"{"aps":{"badge":"3"}}"#, "aps.badge"),
        (#"{"aps":{"alert":5}}"#, "aps.alert"),
        (#"{"aps":{"alert":{"loc-args":[1]}}}"#, "aps.alert.loc-args[0]"),
        (#"{"aps":{"sound":{"critical":1,"volume":"loud"}}}"#, "aps.sound.volume"),
        (#"{"aps":{"interruption-level":"urgent"}}"#, "aps.interruption-level"),
        (#"{"aps":{"event":"pause"}}"#, "aps.event"),
        (#"{"aps":{"content-available":"yes"}}"#, "aps.content-available"),
        (#"{"aps":[]}"#, "aps"),
        (#"[1,2]"#, "payload"),
        (#"{"aps":"#, "payload"),
    ])
    func wrongTypes(json: String, field: String) {
        #expect {
            try Payload(jsonString: json)
        } throws: { error in
            (error as? NotificationValidationError)?.field == field
        }
    }
}
