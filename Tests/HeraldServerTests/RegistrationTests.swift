import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// `POST /api/token` and `DELETE /api/token/{token}` against docs/api-registration.md.
@Suite("Server: registration API", .timeLimit(.minutes(2)))
struct RegistrationTests {
    @Test(
        "the book's body registers a development token: 201, then 200 for the same body; one record",
        arguments: Backend.available)
    func booksBody(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let hex = String(repeating: "AB", count: 32)
            let first = try await client.call(.post, "/api/token", body: #"{"token": "\#(hex)", "debug": true}"#)
            #expect(first.status == .created)
            #expect(first.json["token"]?.stringValue == hex.lowercased())
            #expect(first.json["environment"]?.stringValue == "development" && first.json["debug"]?.boolValue == true)
            #expect(
                first.json["tokenKind"]?.stringValue == "device"
                    && first.json["topic"]?.stringValue == ServerHarness.topic)
            #expect(first.json["createdAt"]?.stringValue != nil && first.json["updatedAt"]?.stringValue != nil)
            #expect(first.json["userId"] == nil, "absent optional fields are left out")
            // No Content-Type at all: the body is still read as JSON.
            let again = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(hex)", "debug": true}"#,
                headers: [.contentType: "text/plain"])
            #expect(again.status == .ok)
            #expect(try await app.store.count(matching: .topic(ServerHarness.topic)) == 1)
        }
    }

    @Test("every optional field is stored and echoed; a later POST replaces the record; another environment moves it")
    func optionalFields() async throws {
        try await ServerHarness.withServer { client, app in
            let token = testToken(0x11, bytes: 100)
            let installation = UUID()
            let answer = try await client.register(
                token, debug: false,
                extra:
                    #", "environment": "production", "topic": "com.example.app", "userId": "user-42", "preferredLanguages": ["fr-CA", "en"], "appVersion": "2.1", "platform": "ios", "installationId": "\#(installation.uuidString)", "tokenKind": "voip", "tags": ["beta", "news"], "unknownField": 1"#
            )
            #expect(answer.status == .created)
            let json = answer.json
            #expect(
                json["userId"]?.stringValue == "user-42" && json["appVersion"]?.stringValue == "2.1"
                    && json["platform"]?.stringValue == "iOS")
            #expect(json["preferredLanguages"] == ["fr-CA", "en"] && json["tags"] == ["beta", "news"])
            #expect(
                json["installationId"]?.stringValue == installation.uuidString.lowercased()
                    && json["tokenKind"]?.stringValue == "voip")

            let replaced = try await client.register(token, debug: true, extra: #", "userId": null"#)
            #expect(replaced.status == .ok)
            let device = try #require(try await app.store.device(token))
            #expect(
                device.environment == .development && device.userID == nil && device.tags.isEmpty
                    && device.tokenKind == .device)
        }
    }

    @Test("a time zone, a push-to-start token's activity type and an update token's activity id are stored and echoed")
    func timeZoneAndActivities() async throws {
        try await ServerHarness.withServer { client, app in
            let start = try await client.register(
                testToken(0x12), debug: true,
                extra: #", "tokenKind": "liveactivity-start", "activityType": "DeliveryAttributes", "timeZone": "Asia/Tokyo""#)
            #expect(start.status == .created, "\(start)")
            #expect(start.json["activityType"] == "DeliveryAttributes" && start.json["timeZone"] == "Asia/Tokyo")
            let update = try await client.register(
                testToken(0x13), debug: true, extra: #", "tokenKind": "liveactivity", "activityId": "order-1234""#)
            #expect(update.status == .created && update.json["activityId"] == "order-1234", "\(update)")
            let stored = try #require(try await app.store.device(testToken(0x13)))
            #expect(stored.registration.activityID == "order-1234" && stored.registration.timeZone == nil)
        }
    }

    @Test("a new token for the same installation and kind replaces the old one")
    func installationReplacesToken() async throws {
        try await ServerHarness.withServer { client, app in
            let installation = #", "installationId": "2f1c6a4e-8d0b-4c55-9a37-1f3e5b7d9c01""#
            try await client.register(testToken(0x21), debug: true, extra: installation)
            try await client.register(testToken(0x22), debug: true, extra: installation)
            #expect(try await app.store.device(testToken(0x21)) == nil)
            #expect(try await app.store.device(testToken(0x22)) != nil)
        }
    }

    /// A request that must fail: status and reason.
    struct BadRequest: Sendable, CustomTestStringConvertible {
        let name: String
        let method: HTTPRequest.Method
        let path: String
        let body: String?
        let status: HTTPResponse.Status
        let reason: String

        init(
            _ name: String, _ body: String?, _ reason: String, method: HTTPRequest.Method = .post,
            path: String = "/api/token",
            status: HTTPResponse.Status = .badRequest
        ) {
            self.name = name
            self.method = method
            self.path = path
            self.body = body
            self.status = status
            self.reason = reason
        }

        var testDescription: String { name }
    }

    static let token = String(repeating: "5e", count: 32)
    static let badRegistrations: [BadRequest] = [
        BadRequest("not JSON", "{token", "invalidJSON"),
        BadRequest("a JSON array", "[1]", "invalidJSON"),
        BadRequest("empty body", "", "invalidJSON"),
        BadRequest("no token", #"{"debug": true}"#, "missingToken"),
        BadRequest("unknown time zone", #"{"token": "\#(token)", "debug": true, "timeZone": "Mars/Base"}"#, "invalidField"),
        // Foundation's UUID(uuidString:) read this one as 12345607-…: the installation id is parsed strictly.
        BadRequest(
            "an installation id with a leading space",
            #"{"token": "\#(token)", "debug": true, "installationId": " 1234567-89ab-cdef-0123-456789abcdef"}"#,
            "invalidField"),
        BadRequest(
            "an activity id on a device token", #"{"token": "\#(token)", "debug": true, "activityId": "a"}"#,
            "invalidField"),
        BadRequest(
            "a push-to-start token without its activity type",
            #"{"token": "\#(token)", "debug": true, "tokenKind": "liveactivity-start"}"#, "invalidField"),
        BadRequest(
            "an activity type on an update token",
            #"{"token": "\#(token)", "debug": true, "tokenKind": "liveactivity", "activityType": "T"}"#, "invalidField"),
        BadRequest("null token", #"{"token": null, "debug": true}"#, "missingToken"),
        BadRequest("token is a number", #"{"token": 12, "debug": true}"#, "invalidField"),
        BadRequest("odd digits", #"{"token": "abc", "debug": true}"#, "badDeviceToken"),
        BadRequest("not hex", #"{"token": "zz\#(token.dropFirst(2))", "debug": true}"#, "badDeviceToken"),
        BadRequest("too short", #"{"token": "abcd", "debug": true}"#, "badDeviceToken"),
        BadRequest(
            "too long", #"{"token": "\#(String(repeating: "ab", count: 513))", "debug": true}"#, "badDeviceToken"),
        BadRequest("no environment", #"{"token": "\#(token)"}"#, "missingEnvironment"),
        BadRequest(
            "debug and environment disagree", #"{"token": "\#(token)", "debug": true, "environment": "production"}"#,
            "environmentConflict"),
        BadRequest("debug is a string", #"{"token": "\#(token)", "debug": "true"}"#, "invalidField"),
        BadRequest("unknown environment", #"{"token": "\#(token)", "environment": "staging"}"#, "invalidField"),
        BadRequest(
            "unknown topic", #"{"token": "\#(token)", "debug": true, "topic": "com.other.app"}"#, "unknownTopic"),
        BadRequest(
            "topic with a space", #"{"token": "\#(token)", "debug": true, "topic": "com.example app"}"#, "invalidField"),
        BadRequest("empty user id", #"{"token": "\#(token)", "debug": true, "userId": ""}"#, "invalidField"),
        BadRequest(
            "user id too long",
            #"{"token": "\#(token)", "debug": true, "userId": "\#(String(repeating: "u", count: 257))"}"#,
            "invalidField"),
        BadRequest(
            "bad language", #"{"token": "\#(token)", "debug": true, "preferredLanguages": ["en_US"]}"#, "invalidField"),
        BadRequest(
            "21 languages",
            #"{"token": "\#(token)", "debug": true, "preferredLanguages": [\#(Array(repeating: "\"en\"", count: 21).joined(separator: ","))]}"#,
            "invalidField"),
        BadRequest(
            "languages not an array", #"{"token": "\#(token)", "debug": true, "preferredLanguages": "en"}"#,
            "invalidField"),
        BadRequest(
            "unknown platform", #"{"token": "\#(token)", "debug": true, "platform": "android"}"#, "invalidField"),
        BadRequest(
            "installation id not a UUID", #"{"token": "\#(token)", "debug": true, "installationId": "x"}"#,
            "invalidField"),
        BadRequest("unknown token kind", #"{"token": "\#(token)", "debug": true, "tokenKind": "fax"}"#, "invalidField"),
        BadRequest(
            "51 tags",
            #"{"token": "\#(token)", "debug": true, "tags": [\#((0...50).map { "\"t\($0)\"" }.joined(separator: ","))]}"#,
            "invalidField"),
        BadRequest(
            "tag too long",
            #"{"token": "\#(token)", "debug": true, "tags": ["\#(String(repeating: "t", count: 65))"]}"#, "invalidField"
        ),
        BadRequest(
            "app version too long",
            #"{"token": "\#(token)", "debug": true, "appVersion": "\#(String(repeating: "9", count: 65))"}"#,
            "invalidField"),
        BadRequest(
            "body over 16 KiB",
            #"{"token": "\#(token)", "debug": true, "pad": "\#(String(repeating: "x", count: 16 * 1024))"}"#,
            "payloadTooLarge", status: .contentTooLarge),
        BadRequest("delete a non-token", nil, "badDeviceToken", method: .delete, path: "/api/token/xyz"),
        BadRequest(
            "delete an unknown token", nil, "unknownToken", method: .delete, path: "/api/token/\(token)",
            status: .notFound),
        BadRequest("an unknown path", nil, "notFound", method: .get, path: "/api/nothing", status: .notFound),
    ]

    @Test("bad input is a 4xx with a reason, never a 5xx, and writes nothing", arguments: badRegistrations)
    func badInput(_ bad: BadRequest) async throws {
        try await ServerHarness.withServer { client, app in
            let answer = try await client.call(bad.method, bad.path, body: bad.body)
            #expect(answer.status == bad.status, "\(answer)")
            #expect(answer.reason == bad.reason, "\(answer)")
            #expect(answer.json["error"]?.stringValue?.isEmpty == false)
            #expect(try await app.store.count(matching: .topic(ServerHarness.topic).includingInvalidated()) == 0)
        }
    }

    @Test("several apps: a registration without a topic is 400 missingTopic")
    func severalAppsNeedATopic() async throws {
        try await ServerHarness.withServer(configure: {
            $0.apps.append(AppConfiguration(bundleID: "com.example.other"))
        }) { client, app in
            let answer = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(Self.token)", "debug": true}"#)
            #expect(answer.status == .badRequest && answer.reason == "missingTopic")
            try await client.register(testToken(0x31), debug: false, extra: #", "topic": "com.example.other""#)
        }
    }

    @Test("DELETE removes a token: 204, then 404 unknownToken")
    func unregister() async throws {
        try await ServerHarness.withServer { client, app in
            let token = testToken(0x41)
            try await client.register(token, debug: true)
            #expect(try await client.call(.delete, "/api/token/\(token.hex.uppercased())").status == .noContent)
            #expect(try await app.store.device(token) == nil)
            let again = try await client.call(.delete, "/api/token/\(token.hex)")
            #expect(again.status == .notFound && again.reason == "unknownToken")
        }
    }

    @Test(
        "registration keys: missing 401, wrong 401, another app's 403, the app's own key works; DELETE with another app's key finds the token unknown"
    )
    func registrationKeys() async throws {
        try await ServerHarness.withServer(configure: { configuration in
            configuration.apps = [
                AppConfiguration(bundleID: "com.example.app", registrationKeys: ["key-one"]),
                AppConfiguration(bundleID: "com.example.other", registrationKeys: ["key-two"]),
            ]
        }) { client, app in
            let body = #"{"token": "\#(Self.token)", "debug": true, "topic": "com.example.app"}"#
            let missing = try await client.call(.post, "/api/token", body: body)
            #expect(missing.status == .unauthorized && missing.reason == "missingRegistrationKey")
            let wrong = try await client.call(.post, "/api/token", body: body, headers: [.registrationKey: "nope"])
            #expect(wrong.status == .unauthorized && wrong.reason == "invalidRegistrationKey")
            let other = try await client.call(.post, "/api/token", body: body, headers: [.registrationKey: "key-two"])
            #expect(other.status == .forbidden && other.reason == "topicNotAllowed")
            #expect(try await app.store.count(matching: .topic("com.example.app")) == 0)
            let own = try await client.call(.post, "/api/token", body: body, headers: [.registrationKey: "key-one"])
            #expect(own.status == .created)

            let path = "/api/token/\(Self.token)"
            #expect(try await client.call(.delete, path).reason == "missingRegistrationKey")
            let elsewhere = try await client.call(.delete, path, headers: [.registrationKey: "key-two"])
            #expect(elsewhere.status == .notFound && elsewhere.reason == "unknownToken", "\(elsewhere)")
            #expect(try await client.call(.delete, path, headers: [.registrationKey: "key-one"]).status == .noContent)
        }
    }

    @Test("without registration keys the header is ignored")
    func openRegistration() async throws {
        try await ServerHarness.withServer { client, _ in
            let answer = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(Self.token)", "debug": false}"#,
                headers: [.registrationKey: "anything"])
            #expect(answer.status == .created)
        }
    }

    @Test("the per-client rate limit answers 429 rateLimited with Retry-After")
    func rateLimit() async throws {
        try await ServerHarness.withServer(configure: { $0.limits.registrationsPerMinute = 2 }) { client, app in
            try await client.register(testToken(0x51), debug: true)
            try await client.register(testToken(0x52), debug: true)
            let limited = try await client.call(
                .post, "/api/token", body: #"{"token": "\#(testToken(0x53).hex)", "debug": true}"#)
            #expect(limited.status == .tooManyRequests && limited.reason == "rateLimited")
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(try await app.store.device(testToken(0x53)) == nil)
        }
    }
}
