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
