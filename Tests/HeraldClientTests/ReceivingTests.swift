import Foundation
import HeraldClient
import HeraldCore
import Testing

/// A payload as it arrives, and the typed payload it must decode to.
struct PayloadExample: Sendable, CustomTestStringConvertible {
    var name: String
    var json: String
    var expected: Payload

    var testDescription: String { name }

    /// Every payload example of apns-protocol.md (§4.5, §4.6, §8.1, and §4.3's Live Activity alert form) and of the
    /// book's chapters on payloads, foreground pushes, silent pushes, actions and the service extension.
    static let all: [PayloadExample] = [
        PayloadExample(
            name: "protocol §4.5: Live Activity update",
            json:
                #"{ "aps": { "timestamp": 1767225600, "event": "update", "content-state": { "score": "2–1", "minute": 78 }, "relevance-score": 100 } }"#,
            expected: Payload(
                aps: APS(
                    relevanceScore: 100, contentState: ["score": "2–1", "minute": 78], timestamp: 1_767_225_600,
                    event: .update))),
        PayloadExample(
            name: "protocol §4.5/§4.3: Live Activity start with a localized alert and its sound inside",
            json:
                #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{"score":"0–0","minute":0},"attributes-type":"MatchAttributes","attributes":{"home":"Lyon","away":"Nantes"},"alert":{"title":{"loc-key":"MATCH_START_TITLE","loc-args":["Lyon","Nantes"]},"body":{"loc-key":"MATCH_START_BODY","loc-args":["Lyon"]},"sound":"whistle.caf"},"input-push-token":1}}"#,
            expected: Payload(
                aps: APS(
                    alert: .content(
                        AlertContent(
                            title: .localized(key: "MATCH_START_TITLE", arguments: ["Lyon", "Nantes"]),
                            body: .localized(key: "MATCH_START_BODY", arguments: ["Lyon"]), sound: "whistle.caf")),
                    contentState: ["score": "0–0", "minute": 0], timestamp: 1_767_225_600, event: .start,
                    attributesType: "MatchAttributes", attributes: ["home": "Lyon", "away": "Nantes"],
                    inputPushToken: true))),
        PayloadExample(
            name: "protocol §4.5: Live Activity end with a dismissal date",
            json:
                #"{"aps":{"timestamp":1767229200,"event":"end","content-state":{"score":"2–1","minute":90},"dismissal-date":1767232800}}"#,
            expected: Payload(
                aps: APS(
                    contentState: ["score": "2–1", "minute": 90], timestamp: 1_767_229_200, event: .end,
                    dismissalDate: 1_767_232_800))),
        PayloadExample(
            name: "protocol §8.1: .apns file for the Simulator",
            json:
                #"{ "Simulator Target Bundle": "com.example.herald.demo", "aps": { "alert": { "title": "Hello", "body": "From an .apns file" }, "badge": 1, "sound": "default" }, "orderID": "A-1042" }"#,
            expected: Payload(
                alert: AlertContent(title: "Hello", body: "From an .apns file"), badge: 1, sound: .default,
                custom: ["Simulator Target Bundle": "com.example.herald.demo", "orderID": "A-1042"])),
        PayloadExample(
            name: "protocol §4.6: background",
            json: #"{"aps":{"content-available":1}}"#,
            expected: .background()),
        PayloadExample(
            name: "protocol §4.6: widgets and controls",
            json: #"{"aps":{"content-changed":true}}"#,
            expected: .contentChanged),
        PayloadExample(
            name: "protocol §4.6: File Provider, no aps",
            json:
                #"{"container-identifier":"NSFileProviderRootContainerItemIdentifier","domain":"com.example.herald.files"}"#,
            expected: Payload(
                custom: [
                    "container-identifier": "NSFileProviderRootContainerItemIdentifier",
                    "domain": "com.example.herald.files",
                ],
                includesAPS: false)),
        PayloadExample(
            name: "protocol §4.6: MDM, no aps",
            json: #"{"mdm":"7E2B1B8E-4A4C-4A4B-9C41-2B0B0A8D7F1E"}"#,
            expected: Payload(custom: ["mdm": "7E2B1B8E-4A4C-4A4B-9C41-2B0B0A8D7F1E"], includesAPS: false)),
        PayloadExample(
            name: "protocol §4.6: location, empty aps",
            json: #"{"aps":{}}"#,
            expected: Payload()),
        PayloadExample(
            name: "protocol §4.2: Push to Talk service update keeps its extra aps key",
            json: #"{"aps":{"ptt-push-type":"service-update"},"activeSpeaker":"Ana"}"#,
            expected: Payload(
                aps: APS(additional: ["ptt-push-type": "service-update"]), custom: ["activeSpeaker": "Ana"])),
        PayloadExample(
            name: "book: title and body",
            json: #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"}}}"#,
            expected: Payload(alert: AlertContent(title: "Your food is done.", body: "Be careful, it's really hot!"))),
        PayloadExample(
            name: "book: localization keys",
            json:
                #"{"aps":{"alert":{"title-loc-key":"FOOD_ORDERED","loc-key":"FOOD_PICKUP_TIME","loc-args":["2018-05-02T19:32:41Z"]}}}"#,
            expected: Payload(
                aps: APS(
                    alert: .content(
                        AlertContent(
                            titleLocKey: "FOOD_ORDERED", locKey: "FOOD_PICKUP_TIME", locArgs: ["2018-05-02T19:32:41Z"]))
                ))),
        PayloadExample(
            name: "book: badge 12 and a custom sound",
            json:
                #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"},"badge":12,"sound":"filename.caf"}}"#,
            expected: Payload(
                alert: AlertContent(title: "Your food is done.", body: "Be careful, it's really hot!"), badge: 12,
                sound: "filename.caf")),
        PayloadExample(
            name: "book: critical alert sound",
            json:
                #"{"aps":{"alert":{"title":"Your food is done.","body":"Be careful, it's really hot!"},"badge":12,"sound":{"critical":1,"name":"filename.caf","volume":0.75}}}"#,
            expected: Payload(
                alert: AlertContent(title: "Your food is done.", body: "Be careful, it's really hot!"), badge: 12,
                sound: .critical(CriticalSound(name: "filename.caf", volume: 0.75)))),
        PayloadExample(
            name: "book: custom coordinates beside aps",
            json:
                #"{"aps":{"alert":{"title":"Save The Princess!"}},"coords":{"latitude":37.33182,"longitude":-122.03118}}"#,
            expected: Payload(
                alert: AlertContent(title: "Save The Princess!", body: nil),
                custom: ["coords": ["latitude": 37.33182, "longitude": -122.03118]])),
        PayloadExample(
            name: "book: foreground test push",
            json:
                #"{"aps":{"alert":{"title":"Hello Foreground!","body":"This notification appeared in the foreground."}}}"#,
            expected: Payload(
                alert: AlertContent(title: "Hello Foreground!", body: "This notification appeared in the foreground."))),
        PayloadExample(
            name: "book: a Boolean custom key (beach) stays a Boolean",
            json: #"{"beach":true,"aps":{"alert":{"body":"Tap me!"}}}"#,
            expected: Payload(alert: AlertContent(title: nil, body: "Tap me!"), custom: ["beach": true])),
        PayloadExample(
            name: "book: silent push with an image to prefetch",
            json:
                #"{"aps":{"content-available":1},"image":"http://dwz.date/dBxF","text":"A nice picture of the Earth"}"#,
            expected: .background(custom: ["image": "http://dwz.date/dBxF", "text": "A nice picture of the Earth"])),
        PayloadExample(
            name: "book: AcceptOrReject category",
            json:
                #"{"aps":{"alert":{"title":"3D Touch this notification (long-press)"},"category":"AcceptOrReject","sound":"default"}}"#,
            expected: Payload(
                aps: APS(
                    alert: .content(AlertContent(title: "3D Touch this notification (long-press)", body: nil)),
                    sound: .default,
                    category: "AcceptOrReject"))),
        PayloadExample(
            name: "book: service extension push with mutable-content and a media URL",
            json:
                #"{"aps":{"alert":{"title":"Lbh unir n arj zrffntr","body":"Purpx lbhe vaobk"},"badge":1,"mutable-content":1},"media-url":"uggcf://jjj.rknzcyr.pbz/zrqvn.zc4"}"#,
            expected: Payload(
                aps: APS(
                    alert: .content(AlertContent(title: "Lbh unir n arj zrffntr", body: "Purpx lbhe vaobk")), badge: 1,
                    mutableContent: true), custom: ["media-url": "uggcf://jjj.rknzcyr.pbz/zrqvn.zc4"])),
    ]
}

@Suite("Decoding received notifications")
struct ReceivingTests {
    /// `userInfo` as the system builds it from the payload: what `JSONSerialization` returns.
    static func userInfo(_ json: String) throws -> [AnyHashable: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test("every documented example decodes from JSON bytes", arguments: PayloadExample.all)
    func fromJSON(example: PayloadExample) throws {
        #expect(try Payload(jsonBytes: Array(example.json.utf8)) == example.expected)
    }

    @Test("every documented example decodes from userInfo as JSONSerialization gives it", arguments: PayloadExample.all)
    func fromUserInfo(example: PayloadExample) throws {
        let decoded = try Payload(userInfo: try Self.userInfo(example.json))
        #expect(decoded == example.expected)
        // And back: the decoded payload encodes to the same JSON structure.
        #expect(try JSONValue(parsing: decoded.jsonBytes()) == (try JSONValue(parsing: example.json)))
    }

    @Test("a payload turned back into userInfo decodes to itself", arguments: PayloadExample.all)
    func userInfoRoundTrip(example: PayloadExample) throws {
        let userInfo = example.expected.userInfo
        #expect(try Payload(userInfo: userInfo) == example.expected)
        // What JSONSerialization would write from it is the payload's own JSON.
        let data = try JSONSerialization.data(withJSONObject: userInfo)
        #expect(try JSONValue(parsing: data) == (try JSONValue(parsing: example.expected.jsonBytes())))
    }

    @Test("JSONSerialization's objects convert to exactly what core's parser reads")
    func sameAsParser() throws {
        let json =
            #"{"a":1,"b":true,"c":false,"d":0,"e":1.5,"f":1.0,"g":-7,"h":12345678901234,"i":null,"j":[1,true,"x",[]],"k":{"l":{}},"m":"1","n":1e3}"#
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
        #expect(try JSONValue(foundationValue: object) == (try JSONValue(parsing: json)))
    }

    @Test(
        "NSNumber Booleans stay Booleans and NSNumber integers stay integers",
        arguments: [
            ("NSNumber(true)", { @Sendable in NSNumber(value: true) }, JSONValue.bool(true)),
            ("NSNumber(false)", { @Sendable in NSNumber(value: false) }, .bool(false)),
            ("NSNumber(1)", { @Sendable in NSNumber(value: 1) }, .integer(1)),
            ("NSNumber(0)", { @Sendable in NSNumber(value: 0) }, .integer(0)),
            ("NSNumber(Int64)", { @Sendable in NSNumber(value: Int64(1) << 40) }, .integer(1 << 40)),
            ("NSNumber(UInt64.max)", { @Sendable in NSNumber(value: UInt64.max) }, .number(Double(UInt64.max))),
            ("NSNumber(0.75)", { @Sendable in NSNumber(value: 0.75) }, .number(0.75)),
            ("Bool", { @Sendable in true }, .bool(true)),
            ("Int", { @Sendable in 1 }, .integer(1)),
            ("UInt8", { @Sendable in UInt8(200) }, .integer(200)),
            ("Double", { @Sendable in 2.5 }, .number(2.5)),
            ("Float", { @Sendable in Float(0.5) }, .number(0.5)),
            ("NSString", { @Sendable in NSString(string: "text") }, .string("text")),
            ("NSNull", { @Sendable in NSNull() }, .null),
            (
                "mixed array", { @Sendable in [NSNumber(value: 1), NSNumber(value: true), "x"] as [Any] },
                [1, true, "x"]
            ),
            (
                "NSDictionary",
                { @Sendable in NSDictionary(dictionary: ["flag": NSNumber(value: true), "n": NSNumber(value: 1)]) },
                ["flag": true, "n": 1]
            ),
        ] as [(String, @Sendable () -> Any, JSONValue)])
    func numbers(name: String, make: @Sendable () -> Any, expected: JSONValue) throws {
        #expect(try JSONValue(foundationValue: make()) == expected, "\(name)")
    }

    @Test("content-available 1 as an NSNumber is a flag, and a Boolean custom key is not mistaken for 1")
    func appleShapedUserInfo() throws {
        let userInfo: [AnyHashable: Any] = [
            "aps": NSDictionary(dictionary: [
                "content-available": NSNumber(value: 1), "badge": NSNumber(value: 3),
                "sound": NSString(string: "default"),
            ]),
            "beach": NSNumber(value: true),
            "count": NSNumber(value: 1),
        ]
        let payload = try Payload(userInfo: userInfo)
        #expect(payload.aps.contentAvailable && payload.aps.badge == 3 && payload.aps.sound == .default)
        #expect(payload.custom == ["beach": .bool(true), "count": .integer(1)])
        #expect(try JSONValue(parsing: payload.jsonBytes())["aps"]?["content-available"] == .integer(1))
    }

    @Test("values JSON cannot hold and wrongly typed keys are named")
    func errors() throws {
        #expect {
            try Payload(userInfo: ["aps": ["alert": "Hi"] as [String: Any], "sentAt": Date()])
        } throws: { error in
            guard let error = error as? NotificationDecodingError else { return false }
            return error.code == .unsupportedValue && error.path == "userInfo.sentAt" && error.message.contains("Date")
        }
        #expect {
            try Payload(userInfo: ["extra": [1: "one"] as [Int: String]])
        } throws: { ($0 as? NotificationDecodingError)?.code == .nonStringKey }
        #expect {
            try Payload(userInfo: try Self.userInfo(#"{"aps":{"badge":"3"}}"#))
        } throws: { error in
            guard let error = error as? NotificationDecodingError else { return false }
            return error.code == .invalidPayload && error.path == "aps.badge" && error.underlying?.code == .invalidField
        }
    }
}

@Suite("Which handler an arrival goes to")
struct RoutingTests {
    @Test(
        "the book's table: foreground or not × content-available or not",
        arguments: [
            (AppState.foreground, false, true, [NotificationHandler.willPresent]),
            (.foreground, true, true, [.willPresent, .backgroundFetch]),
            (.foreground, true, false, [.backgroundFetch]),
            (.background, false, true, [.shownBySystem]),
            (.background, true, true, [.shownBySystem, .backgroundFetch]),
            (.background, true, false, [.backgroundFetch]),
            (.foreground, false, false, []),
            (.background, false, false, []),
        ])
    func table(state: AppState, contentAvailable: Bool, visible: Bool, expected: [NotificationHandler]) {
        let route = NotificationRoute(
            contentAvailable: contentAvailable, isVisible: visible, passesThroughServiceExtension: false,
            appState: state)
        #expect(route.handlers == expected)
    }

    @Test(
        "decoded payloads route by their flags",
        arguments: [
            ("book: foreground test push", AppState.foreground, [NotificationHandler.willPresent]),
            ("book: foreground test push", .background, [.shownBySystem]),
            ("book: silent push with an image to prefetch", .foreground, [.backgroundFetch]),
            ("book: silent push with an image to prefetch", .background, [.backgroundFetch]),
            (
                "book: service extension push with mutable-content and a media URL", .background,
                [.serviceExtension, .shownBySystem]
            ),
            (
                "book: service extension push with mutable-content and a media URL", .foreground,
                [.serviceExtension, .willPresent]
            ),
            ("protocol §4.6: location, empty aps", .foreground, []),
        ])
    func payloads(example name: String, state: AppState, expected: [NotificationHandler]) throws {
        let example = try #require(PayloadExample.all.first { $0.name == name })
        #expect(NotificationRoute(payload: example.expected, appState: state).handlers == expected)
    }

    @Test("a visible push that is also content-available reaches both handlers in the foreground")
    func visibleAndBackground() throws {
        var payload = try Payload(jsonString: #"{"aps":{"alert":"New article","content-available":1}}"#)
        #expect(
            NotificationRoute(payload: payload, appState: .foreground).description == "willPresent → backgroundFetch")
        payload.aps.mutableContent = true
        #expect(NotificationRoute(payload: payload, appState: .foreground).contains(.serviceExtension))
        payload.aps.alert = nil
        #expect(
            !NotificationRoute(payload: payload, appState: .foreground).contains(.serviceExtension),
            "the service extension runs only for notifications with alert text")
    }
}
