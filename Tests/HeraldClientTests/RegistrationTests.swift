import Foundation
import HeraldClient
import HeraldCore
import Testing

@Suite("Registration body and settings")
struct RegistrationTests {
    static let tokenBytes = Data((0..<32).map { UInt8($0 * 7 & 0xFF) })
    static let installation = UUID(uuidString: "6F9619FF-8B86-4011-B42D-00C04FC964FF")!

    @Test("token bytes become lowercase hex through core's DeviceToken, whatever their length")
    func tokenHex() throws {
        let registration = try Registration(deviceToken: Self.tokenBytes, environment: .production)
        #expect(registration.token.hex == "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9")
        let long = try Registration(deviceToken: Data(repeating: 0xAB, count: 100), environment: .production)
        #expect(long.token.hex.count == 200)
        #expect(throws: DeviceTokenError.self) { try Registration(deviceToken: Data(), environment: .production) }
    }

    @Test("the body carries every field under its contract name, environment and debug agreeing")
    func fullBody() throws {
        let registration = try Registration(
            deviceToken: Self.tokenBytes, environment: .development, topic: "com.example.herald.demo",
            userID: "user-42", preferredLanguages: ["zh-Hans-CN", "en"], appVersion: "2.4.1", platform: .iOS,
            installationID: Self.installation, tokenKind: .device, tags: ["beta", "sports"], timeZone: "Asia/Tokyo")
        let expected: JSONValue = [
            "token": "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9",
            "debug": true,
            "environment": "development",
            "topic": "com.example.herald.demo",
            "userId": "user-42",
            "preferredLanguages": ["zh-Hans-CN", "en"],
            "appVersion": "2.4.1",
            "platform": "iOS",
            "installationId": "6f9619ff-8b86-4011-b42d-00c04fc964ff",
            "tokenKind": "device",
            "tags": ["beta", "sports"],
            "timeZone": "Asia/Tokyo",
        ]
        #expect(try JSONValue(parsing: registration.jsonBytes) == expected)
        #expect(Registration(json: expected) == registration)
    }

    @Test("the body's members are in name order, so one registration is the same bytes in every process")
    func stableKeyOrder() throws {
        let registration = try Registration(
            deviceToken: Data([0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89]), environment: .production,
            topic: "com.example.app", platform: .iOS, tokenKind: .liveActivity, timeZone: "Europe/Paris",
            activityID: "order-1042")
        #expect(
            String(decoding: registration.jsonBytes, as: UTF8.self)
                == #"{"activityId":"order-1042","debug":false,"environment":"production","platform":"iOS","timeZone":"Europe/Paris","token":"abcdef0123456789","tokenKind":"liveactivity","topic":"com.example.app"}"#
        )
    }

    @Test("Live Activity tokens carry activityType or activityId under their contract names, and decode back")
    func liveActivityBodies() throws {
        let device = try Registration(
            deviceToken: Self.tokenBytes, environment: .development, topic: "com.example.herald.demo",
            userID: "user-42", preferredLanguages: ["fr-FR"], appVersion: "2.4.1", platform: .iOS,
            installationID: Self.installation, tags: ["beta"], timeZone: "Europe/Paris")
        let startToken = try DeviceToken(hex: "aa00bb11cc22dd33ee44ff55")
        let start = device.forPushToStartToken(startToken, activityType: "DeliveryAttributes")
        try start.validate()
        let startBody = try JSONValue(parsing: start.jsonBytes)
        #expect(startBody["tokenKind"] == "liveactivity-start" && startBody["token"] == "aa00bb11cc22dd33ee44ff55")
        #expect(startBody["activityType"] == "DeliveryAttributes" && startBody["activityId"] == nil)
        for field in ["topic", "userId", "preferredLanguages", "appVersion", "installationId", "tags", "timeZone"] {
            #expect(startBody[field] == device.json[field], "\(field) is the installation's")
        }
        #expect(Registration(json: startBody) == start)

        let updateToken = try DeviceToken(hex: "0102030405060708")
        let update = start.forActivityUpdateToken(updateToken, activityID: "order-1042")
        try update.validate()
        let updateBody = try JSONValue(parsing: update.jsonBytes)
        #expect(updateBody["tokenKind"] == "liveactivity" && updateBody["activityId"] == "order-1042")
        #expect(updateBody["activityType"] == nil, "the push-to-start type is not carried over")
        #expect(Registration(json: updateBody) == update)

        let hex = Self.tokenBytes.map { String(format: "%02x", $0) }.joined()
        for wrong in [#""timeZone":9"#, #""activityType":true"#, #""activityId":["a"]"#] {
            #expect(Registration(json: try JSONValue(parsing: #"{"token":"\#(hex)","debug":true,\#(wrong)}"#)) == nil)
        }
    }

    @Test("what the person allows for Live Activities goes under its contract names, is left out when not said, and decodes back")
    func liveActivitySettings() throws {
        var device = try Registration(
            deviceToken: Self.tokenBytes, environment: .development, installationID: Self.installation)
        #expect(device.json["activitiesEnabled"] == nil && device.json["frequentPushesEnabled"] == nil, "not said")
        device.activitiesEnabled = true
        device.frequentPushesEnabled = false
        let start = device.forPushToStartToken(try DeviceToken(hex: "aa00bb11cc22dd33"), activityType: "MatchAttributes")
        let body = try JSONValue(parsing: start.jsonBytes)
        #expect(body["activitiesEnabled"] == true && body["frequentPushesEnabled"] == false, "carried to each token")
        #expect(Registration(json: body) == start)
        let hex = Self.tokenBytes.map { String(format: "%02x", $0) }.joined()
        #expect(Registration(json: try JSONValue(parsing: #"{"token":"\#(hex)","debug":true,"activitiesEnabled":"no"}"#)) == nil)
    }

    @Test("the time zone is the device's by default, may be left out, and a default never fails validation")
    func defaultTimeZone() throws {
        let registration = try Registration(deviceToken: Self.tokenBytes, environment: .production)
        #expect(registration.timeZone == Registration.currentTimeZone)
        if let current = Registration.currentTimeZone {
            #expect(current == TimeZone.current.identifier)
        }
        try registration.validate()
        let without = try Registration(deviceToken: Self.tokenBytes, environment: .production, timeZone: nil)
        #expect(try JSONValue(parsing: without.jsonBytes)["timeZone"] == nil)
        for zone in ["Asia/Tokyo", "America/Argentina/Buenos_Aires", "Etc/GMT+9", "UTC", "America/Port-au-Prince"] {
            var valid = without
            valid.timeZone = zone
            try valid.validate()
        }
    }

    @Test("the app initializer fills the installation's fields from the bundle and the device, for every token kind")
    func appRegistration() throws {
        let token = try DeviceToken(hex: "0102030405060708")
        let registration = Registration(
            app: token, kind: .liveActivity, environment: .development, installationID: Self.installation,
            userID: "user-42", tags: ["beta"])
        #expect(registration.token == token && registration.tokenKind == .liveActivity)
        #expect(registration.topic == Bundle.main.bundleIdentifier)
        #expect(registration.appVersion == Bundle.main.infoDictionary?["CFBundleShortVersionString"] as? String)
        #expect(registration.preferredLanguages == Locale.preferredLanguages)
        #expect(registration.platform == Platform.current && registration.timeZone == Registration.currentTimeZone)
        #expect(registration.installationID == Self.installation && registration.userID == "user-42")
        #expect(registration.tags == ["beta"] && registration.activityID == nil && registration.activityType == nil)
    }

    @Test("an activity id may be any text of up to 256 bytes without control characters")
    func activityIDs() throws {
        var registration = try Registration(
            deviceToken: Self.tokenBytes, environment: .production, tokenKind: .liveActivity, activityID: "x")
        for id in ["order-1042", "match:PSG–OL 2026/01/02", "注文 42", String(repeating: "é", count: 128)] {
            registration.activityID = id
            try registration.validate()
        }
    }

    @Test("the minimal body is the book's {token, debug} plus environment and kind", arguments: APNSEnvironment.all)
    func minimalBody(environment: APNSEnvironment) throws {
        let registration = try Registration(
            deviceToken: Self.tokenBytes, environment: environment, platform: nil, timeZone: nil)
        let body = try JSONValue(parsing: registration.jsonBytes)
        #expect(body.objectValue?.keys.sorted() == ["debug", "environment", "token", "tokenKind"])
        #expect(body["debug"] == .bool(environment == .development))
        #expect(body["environment"] == .string(environment.name))
    }

    @Test("decoding accepts the book's body and the server's echo, and refuses broken ones")
    func decodeLeniently() throws {
        let hex = "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9"
        let book = try #require(Registration(json: try JSONValue(parsing: #"{"token":"\#(hex)","debug":true}"#)))
        #expect(book.environment == .development && book.tokenKind == .device && book.topic == nil)
        let echo = try #require(
            Registration(
                json: try JSONValue(
                    parsing:
                        #"{"id":17,"token":"\#(hex)","debug":true,"environment":"production","createdAt":"2026-01-01T00:00:00Z"}"#
                )))
        #expect(echo.environment == .production, "environment wins over debug")
        #expect(Registration(json: try JSONValue(parsing: #"{"token":"\#(hex)"}"#)) == nil, "no environment")
        #expect(Registration(json: try JSONValue(parsing: #"{"token":"xyz","debug":true}"#)) == nil, "not hex")
        #expect(Registration(json: try JSONValue(parsing: #"{"token":"\#(hex)","debug":true,"tags":[1]}"#)) == nil)
        #expect(
            Registration(json: try JSONValue(parsing: #"{"token":"\#(hex)","debug":true,"platform":"Android"}"#)) == nil
        )
    }

    /// Gives a registration a token kind and Live Activity fields.
    static func kind(
        _ kind: TokenKind, type: String? = nil, id: String? = nil
    ) -> @Sendable (inout Registration) -> Void {
        { registration in
            registration.tokenKind = kind
            registration.activityType = type
            registration.activityID = id
        }
    }

    @Test(
        "fields beyond the documented limits are refused before any request",
        arguments: [
            ("topic", { @Sendable (r: inout Registration) in r.topic = "com.example app" }),
            ("userId", { @Sendable (r: inout Registration) in r.userID = "" }),
            ("appVersion", { @Sendable (r: inout Registration) in r.appVersion = String(repeating: "9", count: 65) }),
            ("preferredLanguages", { @Sendable (r: inout Registration) in r.preferredLanguages = ["en_US"] }),
            (
                "preferredLanguages",
                { @Sendable (r: inout Registration) in r.preferredLanguages = Array(repeating: "en", count: 21) }
            ),
            ("tags", { @Sendable (r: inout Registration) in r.tags = [""] }),
            ("tags", { @Sendable (r: inout Registration) in r.tags = (0..<51).map { "t\($0)" } }),
            ("timeZone", { @Sendable (r: inout Registration) in r.timeZone = "" }),
            ("timeZone", { @Sendable (r: inout Registration) in r.timeZone = "Asia/ Tokyo" }),
            ("timeZone", { @Sendable (r: inout Registration) in r.timeZone = "/Asia/Tokyo" }),
            ("timeZone", { @Sendable (r: inout Registration) in r.timeZone = "Europe/Zürich" }),
            ("timeZone", { @Sendable (r: inout Registration) in r.timeZone = String(repeating: "A", count: 65) }),
            // Push-to-start tokens need the type they start, and only they name one.
            ("activityType", RegistrationTests.kind(.liveActivityStart)),
            ("activityType", RegistrationTests.kind(.liveActivityStart, type: "")),
            ("activityType", RegistrationTests.kind(.liveActivityStart, type: "Delivery Attributes")),
            ("activityType", RegistrationTests.kind(.liveActivityStart, type: String(repeating: "A", count: 257))),
            ("activityType", RegistrationTests.kind(.device, type: "DeliveryAttributes")),
            ("activityType", RegistrationTests.kind(.liveActivity, type: "DeliveryAttributes", id: "order-1042")),
            // Update tokens need the app's id of their activity, and only they have one.
            ("activityId", RegistrationTests.kind(.liveActivity)),
            ("activityId", RegistrationTests.kind(.liveActivity, id: "")),
            ("activityId", RegistrationTests.kind(.liveActivity, id: "order\n1042")),
            ("activityId", RegistrationTests.kind(.liveActivity, id: "order\u{85}1042")),
            ("activityId", RegistrationTests.kind(.liveActivity, id: String(repeating: "é", count: 129))),
            ("activityId", RegistrationTests.kind(.device, id: "order-1042")),
            ("activityId", RegistrationTests.kind(.liveActivityStart, type: "DeliveryAttributes", id: "order-1042")),
        ] as [(String, @Sendable (inout Registration) -> Void)])
    func limits(field: String, breakIt: @Sendable (inout Registration) -> Void) throws {
        var registration = try Registration(deviceToken: Self.tokenBytes, environment: .production)
        try registration.validate()
        breakIt(&registration)
        #expect {
            try registration.validate()
        } throws: { error in
            guard let error = error as? RegistrationError else { return false }
            return error.code == .invalidRegistration && error.field == field && error.message.contains(field)
        }
    }

    @Test("plain HTTP is refused with an explanation unless explicitly allowed")
    func insecureURL() throws {
        let local = URL(string: "http://192.168.1.1:8080")!
        #expect {
            try RegistrationClient.Configuration(serverURL: local)
        } throws: { error in
            guard let error = error as? RegistrationError else { return false }
            return error.code == .insecureURL && error.message.contains("allowsInsecureHTTP")
        }
        let allowed = try RegistrationClient.Configuration(serverURL: local, allowsInsecureHTTP: true)
        #expect(allowed.serverURL == local)
        _ = try RegistrationClient.Configuration(serverURL: URL(string: "https://push.example.com/herald")!)
        #expect {
            try RegistrationClient.Configuration(serverURL: URL(string: "ftp://push.example.com")!)
        } throws: { ($0 as? RegistrationError)?.code == .invalidServerURL }
        #expect {
            try RegistrationClient.Configuration(serverURL: URL(string: "/api/token")!)
        } throws: { ($0 as? RegistrationError)?.code == .invalidServerURL }
    }

    @Test(
        "backoff doubles up to the cap, jitter only shortens it, and Retry-After is honoured up to the cap",
        arguments: [
            (1, 0.0, nil, Duration.seconds(1)), (2, 0.0, nil, .seconds(2)), (3, 0.0, nil, .seconds(4)),
            (10, 0.0, nil, .seconds(30)), (3, 1.0, nil, .seconds(2)), (3, 0.5, nil, .seconds(3)),
            (1, 0.0, Duration.seconds(7), .seconds(7)), (1, 0.0, .seconds(3600), .seconds(30)),
            (3, 0.0, .seconds(1), .seconds(4)),
        ] as [(Int, Double, Duration?, Duration)])
    func backoff(attempt: Int, random: Double, retryAfter: Duration?, expected: Duration) {
        let policy = RetryPolicy(
            maximumAttempts: 10, initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(30), jitter: 0.5)
        #expect(policy.delay(afterAttempt: attempt, randomFraction: random, retryAfter: retryAfter) == expected)
    }

    @Test("only 429 and 5xx are retryable", arguments: [200, 201, 400, 401, 403, 404, 413, 429, 500, 502, 503, 599])
    func retryable(status: Int) {
        #expect(RetryPolicy.isRetryable(status: status) == (status == 429 || status >= 500))
    }
}
