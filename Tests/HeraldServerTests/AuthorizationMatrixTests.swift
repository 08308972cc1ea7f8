import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldServer

/// The authorization matrix (issue 29, item 5; docs/security.md, "The matrix"): every operation of the OpenAPI
/// document that takes an API key, asked by every kind of caller, answers what the model says, with a status the
/// document lists for it. An operation added to the document without a row here fails the test.
@Suite("Server: the authorization matrix of every API operation", .timeLimit(.minutes(6)))
struct AuthorizationMatrixTests {
    static let alpha = "com.alpha.app"
    static let beta = "com.beta.app"

    /// Who asks: the rows of docs/security.md's matrix.
    enum Caller: String, CaseIterable, Sendable {
        case noKey = "no key"
        /// `send` + `admin`, for beta only; asks about alpha.
        case wrongApp = "wrong app"
        /// `send` + `admin`, for alpha in development only; asks about alpha in production.
        case wrongEnvironment = "wrong environment"
        case expired, revoked
        /// `read`.
        case viewer
        /// `send`.
        case `operator`
        /// `send` + `admin`, every app.
        case admin
    }

    /// What a caller gets.
    enum Expected: Equatable, CustomStringConvertible {
        /// A 2xx.
        case allowed
        /// A 2xx that holds nothing of alpha's (a list filtered to the key's apps or environment).
        case filtered
        case unauthorized, forbidden, notFound

        var description: String {
            switch self {
            case .allowed: "2xx"
            case .filtered: "2xx without alpha's resource"
            case .unauthorized: "401"
            case .forbidden: "403"
            case .notFound: "404"
            }
        }

        func matches(_ status: HTTPResponse.Status) -> Bool {
            switch self {
            case .allowed, .filtered: (200..<300).contains(status.code)
            case .unauthorized: status == .unauthorized
            case .forbidden: status == .forbidden
            case .notFound: status == .notFound
            }
        }
    }

    /// One request, made against alpha's resources.
    struct Request: Sendable {
        var uri: String
        var body: String?
        /// Text of alpha's resource that a filtered answer must not hold.
        var marker: String?
    }

    /// What an operation needs, and how the key limits answer it.
    struct Operation: Sendable {
        /// The scope a key needs: `send` or `admin` (both readable with `read`); `audit`: `admin`, not readable with
        /// `read`; `keys` for key management (`admin` without limits).
        enum Needs: Sendable { case send, admin, audit, keys }
        let needs: Needs
        /// What a key for beta gets.
        let wrongApp: Expected
        /// What a key for alpha's development environment gets.
        let wrongEnvironment: Expected
        /// Makes alpha's resource the request is about (a fresh one: some requests delete it), and the request.
        let prepare: @Sendable (Fixture) async throws -> Request

        func expected(_ caller: Caller, method: HTTPRequest.Method) -> Expected {
            switch caller {
            case .noKey, .expired, .revoked: return .unauthorized
            case .admin: return .allowed
            case .operator: return needs == .send ? .allowed : .forbidden
            case .viewer: return (needs == .send || needs == .admin) && method == .get ? .allowed : .forbidden
            case .wrongApp: return needs == .keys ? .forbidden : wrongApp
            case .wrongEnvironment: return needs == .keys ? .forbidden : wrongEnvironment
            }
        }
    }

    /// The server's alpha device and an admin key to make resources with.
    struct Fixture: Sendable {
        let client: ServerClient
        let admin: String
        let device: DeviceToken
        let counter = Counter()

        final class Counter: Sendable {
            let value = Atomic<Int>(0)
        }

        func unique(_ prefix: String) -> String { "\(prefix)-\(counter.value.add(1, ordering: .relaxed).newValue)" }

        func make(_ method: HTTPRequest.Method, _ uri: String, _ body: String) async throws -> JSONValue {
            let answer = try await client.call(method, uri, body: body, bearer: admin)
            try #require((200..<300).contains(answer.status.code), "setting up \(uri): \(answer)")
            return answer.json
        }

        func send(later: Bool = false) async throws -> String {
            let at = later ? #", "sendAt": "\#(RFC3339.string(Date().addingTimeInterval(3600)))""# : ""
            let body = #"{"target": {"token": "\#(device.hex)"}, "topic": "\#(alpha)", "environment": "production", "alert": "x"\#(at)}"#
            return try #require(try await make(.post, "/api/send", body)["id"]?.stringValue)
        }

        func activity() async throws -> String {
            let id = unique("order")
            _ = try await make(.post, "/api/activities", AuthorizationMatrixTests.startBody(id))
            return id
        }

        func webhook() async throws -> String {
            let body = #"{"topic": "\#(alpha)", "url": "http://127.0.0.1:9/\#(unique("h"))", "events": ["send.completed"]}"#
            return try #require(try await make(.post, "/api/webhooks", body)["endpoint"]?["id"]?.stringValue)
        }

        func channel() async throws -> String {
            let made = try await make(.post, "/api/channels", #"{"topic": "\#(alpha)", "environment": "production"}"#)
            let id = try #require(made["channel"]?["id"]?.stringValue)
            return id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id
        }
    }

    static func startBody(_ id: String) -> String {
        #"{"activityId": "\#(id)", "activityType": "T", "target": {"user": "u"}, "topic": "\#(alpha)", "environment": "production", "attributes": {}, "contentState": {}, "alert": "x"}"#
    }

    /// Every operation that takes an API key, by `METHOD /path` as the document writes it.
    static let operations: [String: Operation] = [
        "POST /api/send": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .forbidden) { fixture in
            Request(uri: "/api/send", body: #"{"target": {"token": "\#(fixture.device.hex)"}, "topic": "\#(alpha)", "environment": "production", "alert": "x"}"#)
        },
        "GET /api/sends": Operation(needs: .send, wrongApp: .filtered, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/sends", marker: try await fixture.send())
        },
        "GET /api/sends/{id}": Operation(needs: .send, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/sends/\(try await fixture.send())")
        },
        "DELETE /api/sends/{id}": Operation(needs: .send, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/sends/\(try await fixture.send(later: true))")
        },
        "POST /api/activities": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .forbidden) { fixture in
            Request(uri: "/api/activities", body: startBody(fixture.unique("start")))
        },
        "GET /api/activities": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .allowed) { _ in
            Request(uri: "/api/activities?topic=\(alpha)")
        },
        "GET /api/activities/{id}": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/activities/\(try await fixture.activity())?topic=\(alpha)")
        },
        "PATCH /api/activities/{id}": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .forbidden) { fixture in
            Request(uri: "/api/activities/\(try await fixture.activity())", body: #"{"topic": "\#(alpha)", "contentState": {"stop": 2}}"#)
        },
        "DELETE /api/activities/{id}": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .forbidden) { fixture in
            Request(uri: "/api/activities/\(try await fixture.activity())", body: #"{"topic": "\#(alpha)"}"#)
        },
        "POST /api/channels": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .forbidden) { _ in
            Request(uri: "/api/channels", body: #"{"topic": "\#(alpha)", "environment": "production"}"#)
        },
        "GET /api/channels": Operation(needs: .send, wrongApp: .forbidden, wrongEnvironment: .forbidden) { _ in
            Request(uri: "/api/channels?topic=\(alpha)&environment=production")
        },
        "GET /api/channels/{id}": Operation(needs: .send, wrongApp: .notFound, wrongEnvironment: .notFound) { fixture in
            Request(uri: "/api/channels/\(try await fixture.channel())")
        },
        "DELETE /api/channels/{id}": Operation(needs: .send, wrongApp: .notFound, wrongEnvironment: .notFound) { fixture in
            Request(uri: "/api/channels/\(try await fixture.channel())")
        },
        "POST /api/channels/{id}/broadcast": Operation(needs: .send, wrongApp: .notFound, wrongEnvironment: .notFound) { fixture in
            Request(uri: "/api/channels/\(try await fixture.channel())/broadcast", body: #"{"contentState": {"score": "1-0"}}"#)
        },
        "GET /api/devices": Operation(needs: .admin, wrongApp: .forbidden, wrongEnvironment: .filtered) { fixture in
            Request(uri: "/api/devices?topic=\(alpha)", marker: fixture.device.hex)
        },
        "GET /api/devices/{token}": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .notFound) { fixture in
            Request(uri: "/api/devices/\(fixture.device.hex)")
        },
        "GET /api/sends/{id}/devices/{token}": Operation(needs: .send, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/sends/\(try await fixture.send())/devices/\(fixture.device.hex)")
        },
        "GET /api/devices/{token}/preferences": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .notFound) { fixture in
            Request(uri: "/api/devices/\(fixture.device.hex)/preferences")
        },
        "PUT /api/devices/{token}/preferences": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .notFound) { fixture in
            Request(uri: "/api/devices/\(fixture.device.hex)/preferences", body: #"{"categories": {}}"#)
        },
        "POST /api/webhooks": Operation(needs: .admin, wrongApp: .forbidden, wrongEnvironment: .allowed) { _ in
            Request(uri: "/api/webhooks", body: #"{"topic": "\#(alpha)", "url": "http://127.0.0.1:9/h", "events": ["send.completed"]}"#)
        },
        "GET /api/webhooks": Operation(needs: .admin, wrongApp: .filtered, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks", marker: try await fixture.webhook())
        },
        "GET /api/webhooks/{id}": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())")
        },
        "PATCH /api/webhooks/{id}": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())", body: #"{"description": "changed"}"#)
        },
        "DELETE /api/webhooks/{id}": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())")
        },
        "POST /api/webhooks/{id}/rotate-secret": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())/rotate-secret")
        },
        "POST /api/webhooks/{id}/test": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())/test")
        },
        "GET /api/webhooks/{id}/deliveries": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())/deliveries")
        },
        "POST /api/webhooks/{id}/replay": Operation(needs: .admin, wrongApp: .notFound, wrongEnvironment: .allowed) { fixture in
            Request(uri: "/api/webhooks/\(try await fixture.webhook())/replay")
        },
        "GET /api/keys": Operation(needs: .keys, wrongApp: .forbidden, wrongEnvironment: .forbidden) { _ in
            Request(uri: "/api/keys")
        },
        "POST /api/keys": Operation(needs: .keys, wrongApp: .forbidden, wrongEnvironment: .forbidden) { fixture in
            Request(uri: "/api/keys", body: #"{"name": "\#(fixture.unique("made"))"}"#)
        },
        "DELETE /api/keys/{id}": Operation(needs: .keys, wrongApp: .forbidden, wrongEnvironment: .forbidden) { fixture in
            let made = try await fixture.make(.post, "/api/keys", #"{"name": "\#(fixture.unique("doomed"))"}"#)
            return Request(uri: "/api/keys/\(try #require(made["key"]?["id"]?.stringValue))")
        },
        "GET /api/audit": Operation(needs: .audit, wrongApp: .filtered, wrongEnvironment: .allowed) { fixture in
            // The audit log's readers: admin keys, and scoped admin keys for their apps' entries.
            _ = try await fixture.send()
            return Request(uri: "/api/audit?kind=send.created", marker: alpha)
        },
    ]

    /// The operations the document says take an API key, with the statuses it lists for each.
    static func documentedOperations() async throws -> [String: Set<Int>] {
        let document = try await OpenAPIConformanceTests.document()
        guard case .object(let paths)? = document["paths"] else { return [:] }
        var operations: [String: Set<Int>] = [:]
        for (path, item) in paths {
            guard case .object(let methods) = item else { continue }
            for (method, operation) in methods {
                guard case .array(let security)? = operation["security"],
                    security.contains(where: { $0["apiKey"] != nil })
                else { continue }
                let statuses = operation["responses"].flatMap { value -> Set<Int>? in
                    guard case .object(let members) = value else { return nil }
                    return Set(members.keys.compactMap(Int.init))
                }
                operations["\(method.uppercased()) \(path)"] = statuses ?? []
            }
        }
        return operations
    }

    @Test("the document's API-key operations are exactly the matrix's rows")
    func coverage() async throws {
        let documented = try await Self.documentedOperations()
        #expect(Set(documented.keys) == Set(Self.operations.keys), "document minus matrix: \(Set(documented.keys).subtracting(Self.operations.keys).sorted()); matrix minus document: \(Set(Self.operations.keys).subtracting(documented.keys).sorted())")
    }

    @Test("every operation × every caller answers as docs/security.md's model says", arguments: Backend.available)
    func matrix(backend: Backend) async throws {
        let documented = try await Self.documentedOperations()
        try await ServerHarness.withServer(backend, configure: {
            $0.apps = [AppConfiguration(bundleID: Self.alpha), AppConfiguration(bundleID: Self.beta)]
        }) { client, app in
            let device = testToken(0xA7)
            try await client.register(device, debug: false, extra: #", "topic": "\#(Self.alpha)", "userId": "u""#)
            let store = app.store
            let admin = try await store.createAPIKey(name: "admin", scopes: [.send, .admin])
            let revoked = try await store.createAPIKey(name: "revoked", scopes: [.send, .admin])
            _ = try await store.revokeAPIKey(revoked.key.id)
            var secrets: [Caller: String] = [
                .admin: admin.secret.value, .revoked: revoked.secret.value,
                .wrongApp: try await store.createAPIKey(name: "beta", scopes: [.send, .admin], apps: [Self.beta]).secret.value,
                .wrongEnvironment: try await store.createAPIKey(
                    name: "alpha-dev", scopes: [.send, .admin], apps: [Self.alpha], environment: .development
                ).secret.value,
                .expired: try await store.createAPIKey(
                    name: "expired", scopes: [.send, .admin], expiresAt: Date().addingTimeInterval(-60), at: Date().addingTimeInterval(-3600)
                ).secret.value,
                .viewer: try await store.createAPIKey(name: "viewer", scopes: [.read]).secret.value,
                .operator: try await store.createAPIKey(name: "operator", scopes: [.send]).secret.value,
            ]
            secrets[.noKey] = nil
            let fixture = Fixture(client: client, admin: admin.secret.value, device: device)
            var rows = 0
            for name in Self.operations.keys.sorted() {
                let operation = try #require(Self.operations[name])
                let parts = name.split(separator: " ")
                let method = HTTPRequest.Method(String(parts[0]))!
                for caller in Caller.allCases {
                    let request = try await operation.prepare(fixture)
                    let answer = try await client.call(method, request.uri, body: request.body, bearer: secrets[caller])
                    let expected = operation.expected(caller, method: method)
                    #expect(expected.matches(answer.status), "\(name) as \(caller.rawValue): expected \(expected), got \(answer)")
                    if expected == .filtered, let marker = request.marker {
                        #expect(!answer.body.contains(marker), "\(name) as \(caller.rawValue) shows alpha's \(marker)")
                    }
                    if caller == .viewer {
                        #expect(!answer.body.contains(device.hex), "\(name) as viewer shows a whole device token: \(answer)")
                    }
                    if caller == .admin, let marker = request.marker {
                        #expect(answer.body.contains(marker), "\(name) as admin: the resource the filtered rows must not show is there")
                    }
                    #expect(
                        documented[name]?.contains(answer.status.code) == true,
                        "\(name) answered \(answer.status.code), which docs/openapi.yaml does not list for it")
                    rows += 1
                }
            }
            #expect(rows == Self.operations.count * Caller.allCases.count)
        }
    }
}
