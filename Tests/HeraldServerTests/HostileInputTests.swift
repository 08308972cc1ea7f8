import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// NUL bytes and control characters in body fields and query parameters: `400` naming the field, nothing stored,
/// the same on SQLite and PostgreSQL, never `500`.
@Suite("Server: NUL and control characters", .timeLimit(.minutes(2)))
struct HostileInputTests {
    static let token = String(repeating: "cd", count: 32)

    @Test(
        "a registration with a NUL or a control character in a string field is 400 naming it; nothing is stored",
        arguments: Backend.available)
    func registration(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            for (field, extra) in [
                ("userId", #""userId": "al\u0000ice""#),
                ("userId", #""userId": "al\nice""#),
                ("tags", #""tags": ["a\u0000b"]"#),
                ("tags", #""tags": ["ok", "a\u0007b"]"#),
                ("topic", #""topic": "com.example.app\u0000x""#),
                ("appVersion", #""appVersion": "1.0\u0000""#),
                ("installationId", #""installationId": "2f1c6a4e-8d0b-4c55-9a37-1f3e5b7d9c01\u0000""#),
                ("platform", #""platform": "iOS\u0000""#),
                ("tokenKind", #""tokenKind": "device\u0000""#),
                ("note", #""note": "\u0000""#),
            ] {
                let answer = try await client.call(
                    .post, "/api/token", body: #"{"token": "\#(Self.token)", "debug": true, \#(extra)}"#)
                #expect(answer.status == .badRequest, "\(extra): \(answer)")
                // A list names the entry: "tags[0]".
                #expect(answer.json["error"]?.stringValue?.contains("\"\(field)") == true, "\(extra): \(answer)")
            }
            #expect(try await app.store.count(matching: DeviceQuery.topic(ServerHarness.topic)) == 0)
            #expect(try await app.store.device(try DeviceToken(hex: Self.token)) == nil)
        }
    }

    @Test("a NUL or control character in a query parameter is 400 naming it", arguments: Backend.available)
    func queryParameters(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let admin = try await app.store.createAPIKey(name: "admin", scopes: [.admin, .send]).secret.value
            try await client.register(
                try DeviceToken(hex: Self.token), debug: true, extra: #", "userId": "a", "tags": ["a"]"#)
            for (field, query) in [
                ("user", "user=a%00b"), ("tag", "tag=a%00"), ("topic", "topic=com.example.app%00"),
                ("user", "user=a%0Ab"), ("after", "user=a&after=x%00"), ("environment", "user=a&environment=%00"),
                ("includeInvalidated", "user=a&includeInvalidated=true%00"), ("limit", "user=a&limit=1%00"),
            ] {
                let answer = try await client.call(.get, "/api/devices?\(query)", bearer: admin)
                #expect(answer.status == .badRequest, "\(query): \(answer)")
                #expect(answer.json["error"]?.stringValue?.contains("\"\(field)\"") == true, "\(query): \(answer)")
            }
            let sends = try await client.call(.get, "/api/sends/\(UUID())?after=%00", bearer: admin)
            #expect(
                sends.status == .badRequest && sends.json["error"]?.stringValue?.contains("\"after\"") == true,
                "\(sends)")
        }
    }

    @Test("a send with a NUL in any string or member name is 400 naming its path", arguments: Backend.available)
    func send(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { client, app in
            let key = try await app.store.createAPIKey(name: "s", scopes: [.send]).secret.value
            try await client.register(try DeviceToken(hex: Self.token), debug: true, extra: #", "userId": "a""#)
            for (path, body) in [
                ("target.user", #"{"target": {"user": "a\u0000b"}, "alert": "x"}"#),
                ("target.tag", #"{"target": {"tag": "\u0000"}, "alert": "x"}"#),
                ("alert.title", #"{"target": {"user": "a"}, "alert": {"title": "Hi\u0000"}}"#),
                ("data.k\\u0000", #"{"target": {"user": "a"}, "alert": "x", "data": {"k\u0000": 1}}"#),
                ("payload.aps.alert", #"{"target": {"user": "a"}, "payload": {"aps": {"alert": "\u0000"}}}"#),
            ] {
                let answer = try await client.call(.post, "/api/send", body: body, bearer: key)
                #expect(answer.status == .badRequest, "\(path): \(answer)")
                #expect(answer.json["error"]?.stringValue?.contains("\"\(path)\"") == true, "\(path): \(answer)")
            }
        }
    }

    @Test("the store itself refuses a registration with a NUL in a field", arguments: Backend.available)
    func storeGuard(backend: Backend) async throws {
        try await ServerHarness.withServer(backend) { _, app in
            let registration = TokenRegistration(
                token: try DeviceToken(hex: Self.token), topic: ServerHarness.topic, environment: .development,
                tokenKind: .device, userID: "al\u{0}ice", installationID: nil, preferredLanguages: [],
                appVersion: nil, platform: nil, tags: [])
            await #expect(throws: StoreError.self) { try await app.store.upsert(registration) }
            var tagged = registration
            tagged.userID = nil
            tagged.tags = ["a\u{0}b"]
            await #expect(throws: StoreError.self) { try await app.store.upsert(tagged) }
            #expect(try await app.store.device(registration.token) == nil)
        }
    }
}
