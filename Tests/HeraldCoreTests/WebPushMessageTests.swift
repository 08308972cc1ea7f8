import Foundation
import Testing

@testable import HeraldCore

@Suite("Web Push: a notification as Declarative Web Push")
struct WebPushMessageTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)

    static func payload(_ json: String) throws -> Payload { try Payload(jsonBytes: Array(json.utf8)) }

    @Test("title, body, badge, sound, collapse id, language and custom keys map to the declarative format and the RFC 8030 headers")
    func maps() throws {
        let payload = try Self.payload(
            #"{"aps":{"alert":{"title":"Order shipped","body":"Arrives Friday"},"badge":3,"sound":"default","mutable-content":1},"herald":{"send":"abc"}}"#)
        let message = try WebPushMessage.declarative(
            from: payload, navigate: "https://example.com/orders/1", priority: .considerPower,
            expiration: APNSExpiration(secondsSince1970: 1_767_225_600 + 600), collapseID: "order-1", language: "en",
            now: Self.now)
        let json = try JSONValue(parsing: message.payload)
        #expect(json["web_push"] == 8030 && json["app_badge"] == 3 && json["mutable"] == true)
        #expect(json["herald"]?["send"] == "abc", "custom keys ride along for a service worker's receipts")
        let notification = try #require(json["notification"])
        #expect(notification["title"] == "Order shipped" && notification["body"] == "Arrives Friday")
        #expect(notification["navigate"] == "https://example.com/orders/1" && notification["lang"] == "en")
        #expect(notification["tag"] == "order-1" && notification["silent"] == nil && notification["timestamp"] == 1_767_225_600_000)
        #expect(message.ttl == 600 && message.urgency == .normal && message.topic == "order-1")
    }

    @Test("a body alone becomes the title; no sound is silent; no expiration keeps four weeks, 0 none; priority 10 is high")
    func defaults() throws {
        let message = try WebPushMessage.declarative(
            from: try Self.payload(#"{"aps":{"alert":"Hello"}}"#), navigate: "https://example.com", now: Self.now)
        let notification = try #require(try JSONValue(parsing: message.payload)["notification"])
        #expect(notification["title"] == "Hello" && notification["body"] == nil && notification["silent"] == true)
        #expect(message.ttl == WebPushMessage.defaultTTL && message.urgency == .high && message.topic == nil)
        #expect(WebPushMessage.ttl(for: .immediately, now: Self.now) == 0)
        #expect(WebPushMessage.ttl(for: APNSExpiration(secondsSince1970: 1_000), now: Self.now) == 0, "past: 0, never negative")
        #expect(WebPushMessage.Urgency(.prioritizePowerOver) == .low)
    }

    @Test("a collapse id that is no Topic is hashed to one: stable, 32 base64url characters")
    func topics() {
        #expect(WebPushMessage.topic(for: "scores_1-2") == "scores_1-2")
        let hashed = WebPushMessage.topic(for: "match 42: live")
        #expect(hashed.count == 32 && hashed == WebPushMessage.topic(for: "match 42: live"))
        #expect(hashed.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(WebPushMessage.topic(for: String(repeating: "a", count: 33)).count == 32)
    }

    @Test("what a browser cannot show is refused with the reason", arguments: [
        (#"{"aps":{"content-available":1}}"#, "https://example.com", WebPushError.Code.notRenderable),
        (#"{"aps":{"alert":{"loc-key":"SHIPPED"}}}"#, "https://example.com", .notRenderable),
        (#"{"aps":{"alert":"Hi"}}"#, "http://example.com", .invalidNavigate),
        (#"{"aps":{"alert":"Hi"}}"#, "/orders", .invalidNavigate),
    ])
    func refused(json: String, navigate: String, code: WebPushError.Code) throws {
        let payload = try Self.payload(json)
        let error = #expect(throws: WebPushError.self) {
            try WebPushMessage.declarative(from: payload, navigate: navigate, now: Self.now)
        }
        #expect(error?.code == code, "\(json)")
    }

    @Test("a message past the 4,096-byte record is refused before anything is sent")
    func tooLarge() throws {
        let payload = try Self.payload(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4_000))"}}"#)
        let error = #expect(throws: WebPushError.self) {
            try WebPushMessage.declarative(from: payload, navigate: "https://example.com", now: Self.now)
        }
        #expect(error?.code == .payloadTooLarge)
    }
}

@Suite("Web Push: buttons, text direction and the classic format")
struct WebPushMessageOptionsTests {
    static let now = WebPushMessageTests.now

    @Test("the payload's navigate, dir and actions become the notification's, and leave the top level")
    func options() throws {
        let payload = try WebPushMessageTests.payload(
            #"{"aps":{"alert":{"title":"Order shipped"}},"navigate":"https://example.com/orders/1","dir":"ltr","actions":[{"action":"track","title":"Track","navigate":"https://example.com/track/1"},{"action":"help","title":"Help","navigate":"https://example.com/help"}],"order":1}"#)
        let message = try WebPushMessage.declarative(from: payload, navigate: "https://example.com", now: Self.now)
        let json = try JSONValue(parsing: message.payload)
        let notification = try #require(json["notification"])
        #expect(notification["navigate"] == "https://example.com/orders/1", "the payload's link wins over the origin")
        #expect(notification["dir"] == "ltr")
        let actions = try #require(notification["actions"]?.arrayValue)
        #expect(actions.count == 2 && actions[0]["action"] == "track" && actions[0]["title"] == "Track")
        #expect(actions[1]["navigate"] == "https://example.com/help")
        #expect(json["navigate"] == nil && json["dir"] == nil && json["actions"] == nil && json["order"] == 1)
    }

    @Test("a variant in a language written right to left is dir rtl; others none, unless the send says", arguments: [
        ("ar", "rtl"), ("he-IL", "rtl"), ("fa", "rtl"), ("en-GB", nil), ("fr", nil), ("ur-PK", "rtl"),
    ] as [(String, String?)])
    func direction(language: String, expected: String?) throws {
        let payload = try WebPushMessageTests.payload(#"{"aps":{"alert":"Hi"}}"#)
        let message = try WebPushMessage.declarative(
            from: payload, navigate: "https://example.com", language: language, now: Self.now)
        #expect(try JSONValue(parsing: message.payload)["notification"]?["dir"]?.stringValue == expected)
        let given = try WebPushMessage.declarative(
            from: try WebPushMessageTests.payload(#"{"aps":{"alert":"Hi"},"dir":"auto"}"#), navigate: "https://example.com",
            language: language, now: Self.now)
        #expect(try JSONValue(parsing: given.payload)["notification"]?["dir"] == "auto")
    }

    @Test("the classic format has no web_push member, and its link and buttons' links are optional")
    func classic() throws {
        let payload = try WebPushMessageTests.payload(
            #"{"aps":{"alert":{"title":"New message"},"badge":2},"actions":[{"action":"reply","title":"Reply"}]}"#)
        let message = try WebPushMessage.make(.classic, from: payload, navigate: nil, now: Self.now)
        let json = try JSONValue(parsing: message.payload)
        #expect(json["web_push"] == nil && json["app_badge"] == 2)
        #expect(json["notification"]?["title"] == "New message" && json["notification"]?["navigate"] == nil)
        #expect(json["notification"]?["actions"]?.arrayValue?.first?["navigate"] == nil)
        // The declarative format requires both.
        let error = #expect(throws: WebPushError.self) {
            try WebPushMessage.make(.declarative, from: payload, navigate: "https://example.com", now: Self.now)
        }
        #expect(error?.code == .invalidActions)
        let noLink = #expect(throws: WebPushError.self) {
            try WebPushMessage.make(
                .declarative, from: try WebPushMessageTests.payload(#"{"aps":{"alert":"Hi"}}"#), navigate: nil,
                now: Self.now)
        }
        #expect(noLink?.code == .invalidNavigate)
    }

    @Test("buttons and directions a browser would not take are refused with the reason", arguments: [
        (#""actions":[]"#, WebPushError.Code.invalidActions),
        (#""actions":{"action":"a"}"#, .invalidActions),
        (#""actions":[{"action":"a","title":"A","navigate":"https://x.example"},{"action":"b","title":"B","navigate":"https://x.example"},{"action":"c","title":"C","navigate":"https://x.example"}]"#, .invalidActions),
        (#""actions":[{"title":"A","navigate":"https://x.example"}]"#, .invalidActions),
        (#""actions":[{"action":"a","title":"","navigate":"https://x.example"}]"#, .invalidActions),
        (#""actions":[{"action":"a","title":"A","navigate":"http://x.example"}]"#, .invalidActions),
        (#""dir":"up""#, .invalidDirection),
        (#""dir":1"#, .invalidDirection),
        (#""navigate":"ftp://x.example""#, .invalidNavigate),
        (#""navigate":42"#, .invalidNavigate),
    ])
    func refused(member: String, code: WebPushError.Code) throws {
        let payload = try WebPushMessageTests.payload(#"{"aps":{"alert":"Hi"},\#(member)}"#)
        for format in WebPushMessage.Format.allCases {
            let error = #expect(throws: WebPushError.self, "\(format)") {
                try WebPushMessage.make(format, from: payload, navigate: "https://example.com", now: Self.now)
            }
            #expect(error?.code == code, "\(member) in \(format)")
        }
    }
}
