import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
@testable import HeraldSending
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Delivery receipts on the server: the `herald` key in what is sent, and `POST /api/events`.
@Suite("Server: delivery receipts", .timeLimit(.minutes(3)))
struct ReceiptsTests {
    /// Sends an alert to one registered token inline; returns the send's id.
    static func sendOne(
        _ client: ServerClient, _ key: String, to token: DeviceToken, extra: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let answer = try await client.call(
            .post, "/api/send", body: #"{"target": {"token": "\#(token.hex)"}, "alert": "Hi"\#(extra)}"#, bearer: key)
        #expect(answer.status == .ok, "\(answer)", sourceLocation: sourceLocation)
        return try #require(answer.json["id"]?.stringValue, sourceLocation: sourceLocation)
    }

    static func events(_ items: String...) -> String { #"{"events": [\#(items.joined(separator: ", "))]}"# }

    static func event(_ type: String, _ token: DeviceToken, send: String, extra: String = "") -> String {
        #"{"type": "\#(type)", "token": "\#(token.hex)", "sendId": "\#(send)", "at": "2026-01-02T08:00:00Z"\#(extra)}"#
    }

    @Test("alert and background notifications carry the send id in a herald key, counted in the payload; other push types and apps with receipts off do not")
    func heraldKey() async throws {
        try await ServerHarness.withServer(configure: { configuration in
            configuration.apps.append(AppConfiguration(bundleID: "com.example.quiet", receipts: false))
        }) { client, app in
            let emulator = try #require(app.emulator)
            let key = try await SendTests.key(app)
            let phone = testToken(0x31)
            let voip = testToken(0x32)
            let quiet = testToken(0x33)
            try await client.register(phone, debug: true, extra: #", "topic": "com.example.app""#)
            try await client.register(voip, debug: true, extra: #", "topic": "com.example.app", "tokenKind": "voip""#)
            try await client.register(quiet, debug: true, extra: #", "topic": "com.example.quiet""#)

            let id = try await Self.sendOne(client, key, to: phone, extra: #", "topic": "com.example.app""#)
            let payload = try JSONValue(parsing: try #require(try emulator.inbox(for: phone).last).payload)
            #expect(payload["herald"] == .object(["send": .string(id)]), "\(payload)")

            let raw = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"token": "\#(phone.hex)"}, "topic": "com.example.app", "payload": {"aps": {"content-available": 1}, "k": 1}}"#,
                bearer: key)
            #expect(raw.status == .ok, "\(raw)")
            let background = try JSONValue(parsing: try #require(try emulator.inbox(for: phone).last).payload)
            #expect(background["herald"]?["send"]?.stringValue == raw.json["id"]?.stringValue && background["k"] == 1)

            let call = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"token": "\#(voip.hex)"}, "topic": "com.example.app", "pushType": "voip", "data": {"call": 1}}"#,
                bearer: key)
            #expect(call.status == .ok, "\(call)")
            #expect(try JSONValue(parsing: try #require(try emulator.inbox(for: voip).last).payload)["herald"] == nil)

            _ = try await Self.sendOne(client, key, to: quiet, extra: #", "topic": "com.example.quiet""#)
            #expect(try JSONValue(parsing: try #require(try emulator.inbox(for: quiet).last).payload)["herald"] == nil)

            let taken = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"token": "\#(phone.hex)"}, "topic": "com.example.app", "alert": "x", "data": {"herald": 1}}"#,
                bearer: key)
            #expect(taken.status == .badRequest && taken.json["error"]?.stringValue?.contains("data.herald") == true)

            // The key counts against APNs's limit: a payload 10 bytes under it fits for the app without receipts,
            // and not for the app with them.
            let base = #"{"aps":{"alert":"x"},"d":""}"#.utf8.count
            let filler = String(repeating: "a", count: 4096 - 10 - base)
            func dryRun(_ token: DeviceToken, _ topic: String) async throws -> ServerClient.Answer {
                try await client.call(
                    .post, "/api/send?dryRun=true",
                    body: #"{"target": {"token": "\#(token.hex)"}, "topic": "\#(topic)", "alert": "x", "data": {"d": "\#(filler)"}}"#,
                    bearer: key)
            }
            let fits = try await dryRun(quiet, "com.example.quiet")
            #expect(fits.status == .ok && fits.json["notifications"]?.arrayValue?.first?["payloadBytes"] == .integer(4086), "\(fits)")
            let tooLarge = try await dryRun(phone, "com.example.app")
            #expect(tooLarge.status == .badRequest && tooLarge.reason == "PayloadTooLarge", "\(tooLarge)")
        }
    }

    @Test(
        "events count once per device and kind, only for devices the send reached; the send shows counts and rates",
        arguments: Backend.available)
    func eventsCount(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let key = try await SendTests.key(app)
            let (one, two, stranger) = (testToken(0x41), testToken(0x42), testToken(0x43))
            try await client.register(one, debug: true, extra: #", "userId": "u""#)
            try await client.register(two, debug: false, extra: #", "userId": "u""#)
            try await client.register(stranger, debug: true)
            let sent = try await client.call(.post, "/api/send", body: #"{"target": {"user": "u"}, "alert": "Hi"}"#, bearer: key)
            let id = try #require(sent.json["id"]?.stringValue)
            #expect(sent.json["receipts"]?["received"] == 0 && sent.json["receipts"]?["receivedRate"] == 0.0)

            let apnsID = FanOut.apnsID(send: try #require(SendID(id)), token: two).headerValue
            let batch = Self.events(
                Self.event("received", one, send: id), Self.event("opened", one, send: id),
                #"{"type": "action", "token": "\#(two.hex)", "apnsId": "\#(apnsID)", "action": "reply", "at": "2026-01-02T08:00:01.5+01:00"}"#,
                Self.event("received", stranger, send: id))
            let first = try await client.call(.post, "/api/events", body: batch)
            #expect(first.status == .ok, "\(first)")
            #expect(first.body == #"{"duplicates":0,"ignored":1,"recorded":3}"#, "members in name order")
            let again = try await client.call(.post, "/api/events", body: batch)
            #expect(again.json == ["duplicates": 3, "ignored": 1, "recorded": 0], "\(again)")

            let status = try await client.call(.get, "/api/sends/\(id)", bearer: key)
            #expect(
                status.json["receipts"]
                    == [
                        "received": 2, "opened": 1, "actions": 1, "dismissed": 0, "receivedRate": 1.0,
                        "openedRate": 0.5,
                    ], "\(status)")
        }
    }

    @Test(
        "malformed batches are 400 naming the field, and change nothing",
        arguments: [
            (#"[]"#, "invalidJSON", ""), (#"{}"#, "invalidField", "events"), (#"{"events": []}"#, "invalidField", "events"),
            (#"{"events": [1]}"#, "invalidField", "events[0]"),
            (#"{"events": [{"token": "TOKEN", "sendId": "SEND", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].type"),
            (#"{"events": [{"type": "seen", "token": "TOKEN", "sendId": "SEND", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].type"),
            (#"{"events": [{"type": "opened", "token": "abc", "sendId": "SEND", "at": "2026-01-02T08:00:00Z"}]}"#, "badDeviceToken", "events[0].token"),
            (#"{"events": [{"type": "opened", "token": "TOKEN", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].sendId"),
            (#"{"events": [{"type": "opened", "token": "TOKEN", "sendId": "not-a-uuid-but-36-characters-long!!!", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].sendId"),
            (#"{"events": [{"type": "opened", "token": "TOKEN", "sendId": "SEND", "at": "yesterday"}]}"#, "invalidField", "events[0].at"),
            (#"{"events": [{"type": "opened", "token": "TOKEN", "sendId": "SEND"}]}"#, "invalidField", "events[0].at"),
            (#"{"events": [{"type": "action", "token": "TOKEN", "sendId": "SEND", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].action"),
            (#"{"events": [{"type": "opened", "action": "x", "token": "TOKEN", "sendId": "SEND", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].action"),
            (#"{"events": [{"type": "action", "action": "a\nb", "token": "TOKEN", "sendId": "SEND", "at": "2026-01-02T08:00:00Z"}]}"#, "invalidField", "events[0].action"),
            (#"{"events": [{"type": "opened", "token": "TOKEN", "sendId": "SEND", "at": "2026-01-02T08:00:00Z", "note": "\u0000"}]}"#, "invalidField", "events[0].note"),
        ])
    func malformed(body: String, reason: String, field: String) async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await SendTests.key(app)
            let token = testToken(0x51)
            try await client.register(token, debug: true)
            let id = try await Self.sendOne(client, key, to: token)
            // A valid event first: the bad one after it must not let it through.
            let good = Self.event("received", token, send: id)
            let filled = body.replacingOccurrences(of: "TOKEN", with: token.hex).replacingOccurrences(of: "SEND", with: id)
            let sent = filled.hasPrefix(#"{"events": ["#) && filled != #"{"events": []}"#
                ? filled.replacingOccurrences(of: #"{"events": ["#, with: #"{"events": [\#(good), "#) : filled
            let answer = try await client.call(.post, "/api/events", body: sent)
            #expect(answer.status == .badRequest && answer.reason == reason, "\(answer)")
            let named = field.replacingOccurrences(of: "events[0]", with: sent == filled ? "events[0]" : "events[1]")
            #expect(named.isEmpty || answer.json["error"]?.stringValue?.contains(named) == true, "\(answer)")
            #expect(try await app.store.receiptCounts(of: try #require(SendID(id))) == ReceiptCounts())
        }
    }

    @Test("batches are bounded: over 100 events is 400, over 64 KiB is 413; reports are rate-limited per address")
    func bounded() async throws {
        try await ServerHarness.withServer(configure: { $0.limits.registrationsPerMinute = 3 }) { client, app in
            let token = testToken(0x52)
            let event = Self.event("received", token, send: SendID().description)
            let many = try await client.call(
                .post, "/api/events", body: #"{"events": [\#(Array(repeating: event, count: 101).joined(separator: ","))]}"#)
            #expect(many.status == .badRequest && many.reason == "invalidField", "\(many)")
            let huge = try await client.call(
                .post, "/api/events", body: #"{"events": [], "pad": "\#(String(repeating: "x", count: 70_000))"}"#)
            #expect(huge.status == .contentTooLarge, "\(huge)")
            let third = try await client.call(.post, "/api/events", body: Self.events(event))
            #expect(third.status == .ok && third.json["ignored"] == 1, "an unknown send is ignored: \(third)")
            let limited = try await client.call(.post, "/api/events", body: Self.events(event))
            #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] != nil, "\(limited)")
            #expect(try await client.call(.post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": true}"#).status == .created, "registrations have a bucket of their own")
        }
    }

    @Test("with registration keys, reports need a key, and a key speaks only for its own app's devices")
    func registrationKeys() async throws {
        try await ServerHarness.withServer(configure: { configuration in
            configuration.apps[0].registrationKeys = ["key-a"]
            configuration.apps.append(AppConfiguration(bundleID: "com.example.other", registrationKeys: ["key-b"]))
        }) { client, app in
            let key = try await SendTests.key(app)
            let token = testToken(0x53)
            try await client.call(
                .post, "/api/token", body: #"{"token": "\#(token.hex)", "debug": true, "topic": "com.example.app"}"#,
                headers: [.registrationKey: "key-a"])
            let id = try await Self.sendOne(client, key, to: token, extra: #", "topic": "com.example.app""#)
            let batch = Self.events(Self.event("opened", token, send: id))
            #expect(try await client.call(.post, "/api/events", body: batch).reason == "missingRegistrationKey")
            let other = try await client.call(.post, "/api/events", body: batch, headers: [.registrationKey: "key-b"])
            #expect(other.status == .ok && other.json["ignored"] == 1, "another app's device is ignored as a gone one: \(other)")
            let own = try await client.call(.post, "/api/events", body: batch, headers: [.registrationKey: "key-a"])
            #expect(own.json["recorded"] == 1, "\(own)")
        }
    }
}
