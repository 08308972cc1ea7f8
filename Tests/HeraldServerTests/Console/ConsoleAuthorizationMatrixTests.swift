import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import HeraldWebhooks
import Testing

@testable import HeraldServer

/// The console's authorization matrix (issue 43, item 2; docs/security.md, "The console"): every route of the
/// console's router, asked by sessions limited to alpha at each role about beta's resources, answers what the model
/// says and shows nothing of beta; a route added to the console without a row here fails the test. The API's matrix is
/// ``AuthorizationMatrixTests``, from the OpenAPI document.
@Suite("Console: the authorization matrix of every page", .timeLimit(.minutes(3)))
struct ConsoleAuthorizationMatrixTests {
    static let alpha = ScopedKeyTests.alpha
    static let beta = ScopedKeyTests.beta

    /// Beta's resources, which alpha's sessions ask about.
    struct Beta {
        var device = testToken(0xBD)
        var send = ""
        var channel = ""
        var webhook = ""
        var key = ""

        /// What no page may show an alpha session.
        var markers: [String] { [device.hex, send, channel, webhook, key].filter { !$0.isEmpty } }
    }

    /// What an alpha session of a sufficient role gets when it asks the route about beta.
    enum Answer: CustomStringConvertible {
        /// The page, without a trace of beta.
        case page
        /// As unknown as a resource that does not exist.
        case notFound
        /// Refused (a `4xx`), changing nothing: the request named beta's app, or it needs a session without limits.
        case refused
        /// Not the console's to limit: signing in and out, assets.
        case open

        var description: String {
            switch self {
            case .page: "the page"
            case .notFound: "404"
            case .refused: "a 4xx"
            case .open: "open"
            }
        }
    }

    struct Row {
        /// The least role that reaches the route; `nil`: no session needed.
        var role: ConsoleRole?
        var answer: Answer
        /// The request about beta: its path, and its form for a `POST` (the session's CSRF token is added).
        var ask: @Sendable (Beta) -> (path: String, form: [(String, String)])
    }

    static func get(_ role: ConsoleRole?, _ answer: Answer, _ path: @escaping @Sendable (Beta) -> String) -> Row {
        Row(role: role, answer: answer) { (path($0), []) }
    }

    static func post(
        _ role: ConsoleRole?, _ answer: Answer, _ path: @escaping @Sendable (Beta) -> String,
        form: @escaping @Sendable (Beta) -> [(String, String)] = { _ in [] }
    ) -> Row {
        Row(role: role, answer: answer) { (path($0), form($0)) }
    }

    /// Every console route, as the router lists it.
    static let rows: [String: Row] = [
        "GET /console/assets/{name}": get(nil, .open) { _ in "/console/assets/console.css" },
        "GET /console/sign-in": get(nil, .open) { _ in "/console/sign-in" },
        "POST /console/sign-in": post(nil, .open) { _ in "/console/sign-in" },
        "GET /console/sign-in/{token}": get(nil, .open) { _ in "/console/sign-in/not-a-link" },
        "POST /console/sign-out": post(.viewer, .open) { _ in "/console/sign-out" },
        "GET /console": get(.viewer, .page) { _ in "/console" },
        "GET /console/sends": get(.viewer, .page) { _ in "/console/sends?app=\(beta)" },
        "GET /console/sends/{id}": get(.viewer, .notFound) { "/console/sends/\($0.send)" },
        "GET /console/sends/{id}/devices/{token}": get(.viewer, .notFound) { "/console/sends/\($0.send)/devices/\($0.device.hex)" },
        "GET /console/devices": get(.viewer, .page) { "/console/devices?q=\($0.device.hex)" },
        "GET /console/devices/{token}": get(.viewer, .notFound) { "/console/devices/\($0.device.hex)" },
        "GET /console/activities": get(.viewer, .page) { _ in "/console/activities?app=\(beta)" },
        "GET /console/channels": get(.viewer, .page) { _ in "/console/channels?app=\(beta)" },
        "GET /console/emulator": get(.viewer, .refused) { "/console/emulator?token=\($0.device.hex)" },
        "GET /console/compose": get(.operator, .page) { _ in "/console/compose?app=\(beta)" },
        "POST /console/sends/{id}/cancel": post(.operator, .notFound) { "/console/sends/\($0.send)/cancel" },
        "POST /console/activities/end": post(.operator, .refused, { _ in "/console/activities/end" }) { _ in
            [("id", "beta-activity"), ("app", beta)]
        },
        "POST /console/channels": post(.operator, .refused, { _ in "/console/channels" }) { _ in
            [("app", beta), ("environment", "production")]
        },
        "POST /console/channels/delete": post(.operator, .notFound, { _ in "/console/channels/delete" }) { [("id", $0.channel)] },
        "POST /console/preferences": post(.operator, .refused, { _ in "/console/preferences" }) {
            [("topic", beta), ("subject", "u:beta-user"), ("returnTo", "/console/devices/\($0.device.hex)")]
        },
        "POST /console/devices/{token}/remove": post(.admin, .notFound) { "/console/devices/\($0.device.hex)/remove" },
        "GET /console/keys": get(.admin, .refused) { _ in "/console/keys" },
        "POST /console/keys": post(.admin, .refused, { _ in "/console/keys" }) { _ in [("name", "made"), ("scope", "send")] },
        "POST /console/keys/{id}/revoke": post(.admin, .refused) { "/console/keys/\($0.key)/revoke" },
        "GET /console/audit": get(.admin, .page) { _ in "/console/audit" },
        "GET /console/webhooks": get(.admin, .page) { _ in "/console/webhooks" },
        "POST /console/webhooks": post(.admin, .refused, { _ in "/console/webhooks" }) { _ in
            [("topic", beta), ("url", "http://127.0.0.1:9/x"), ("event", "send.completed")]
        },
        "POST /console/webhooks/{id}/{action}": post(.admin, .notFound) { "/console/webhooks/\($0.webhook)/delete" },
    ]

    @Test("the matrix has a row for every route of the console, and no other")
    func everyRoute() async throws {
        try await ServerHarness.withServer { _, app in
            #expect(Set(app.consoleRoutes) == Set(Self.rows.keys), "routes without a row: \(Set(app.consoleRoutes).subtracting(Self.rows.keys).sorted()); rows without a route: \(Set(Self.rows.keys).subtracting(app.consoleRoutes).sorted())")
        }
    }

    @Test(
        "every console route × sessions limited to alpha (viewer, operator, admin) asking about beta: the model's answer, nothing of beta shown, nothing of beta changed",
        arguments: Backend.available)
    func alphaSessions(backend: Backend) async throws {
        try await ServerHarness.withServer(backend, configure: ScopedKeyTests.twoApps) { client, app in
            let everything = try await app.store.createAPIKey(name: "ops", scopes: [.send, .admin])
            var beta = Beta()
            try await client.register(beta.device, debug: false, extra: #", "topic": "\#(Self.beta)", "user": "beta-user""#)
            // Scheduled in an hour: a cancel would still change it.
            let later = RFC3339.string(Date().addingTimeInterval(3600))
            let sent = try await client.call(
                .post, "/api/send",
                body: #"{"target": {"token": "\#(beta.device.hex)"}, "topic": "\#(Self.beta)", "alert": "hi", "sendAt": "\#(later)"}"#,
                bearer: everything.secret.value)
            beta.send = try #require(sent.json["id"]?.stringValue, "\(sent)")
            let channel = try await client.call(
                .post, "/api/channels", body: #"{"topic": "\#(Self.beta)", "environment": "production"}"#,
                bearer: everything.secret.value)
            beta.channel = try #require(channel.json["channel"]?["id"]?.stringValue, "\(channel)")
            beta.webhook = try await app.store.createWebhookEndpoint(
                NewWebhookEndpoint(
                    app: Self.beta, url: "http://127.0.0.1:9/beta-hook", events: [.sendCompleted], description: "",
                    secret: WebhookSecret.make())
            ).id.lowercasedText
            beta.key = try await app.store.createAPIKey(name: "beta-backend", scopes: [.send], apps: [Self.beta]).key.id
                .lowercasedText

            for (role, scopes) in [(ConsoleRole.viewer, [APIKeyScope.read]), (.operator, [.send]), (.admin, [.admin])] {
                let key = try await app.store.createAPIKey(name: "alpha-\(role.rawValue)", scopes: Set(scopes), apps: [Self.alpha])
                // One session per role (sign-ins are rate limited per client), signed out last.
                var session = ConsoleClient(client)
                try await session.signIn(key.secret.value)
                let names = Self.rows.keys.filter { !$0.contains("sign-") }.sorted() + ["POST /console/sign-out"]
                for name in names {
                    let row = try #require(Self.rows[name])
                    let (path, form) = row.ask(beta)
                    let method: HTTPRequest.Method = name.hasPrefix("POST") ? .post : .get
                    let answer = try await session.call(
                        method, path, form: method == .post ? [(ConsoleAuthority.csrfField, session.csrf)] + form : nil)
                    let context = "\(role.rawValue) \(name) (\(path)): expected \(row.answer), got \(answer.status.code)"
                    if let least = row.role, least > role {
                        #expect(answer.status == .forbidden, "\(context)")
                    } else {
                        switch row.answer {
                        case .page: #expect(answer.status == .ok, "\(context)")
                        case .notFound: #expect(answer.status == .notFound, "\(context)")
                        case .refused: #expect((400..<500).contains(answer.status.code), "\(context)")
                        case .open: #expect(answer.status.code < 500, "\(context)")
                        }
                    }
                    // A marker the request carried may be said back (a search box); a link to it may not.
                    let asked = path + form.map(\.1).joined()
                    for marker in beta.markers where answer.body.contains(asked.contains(marker) ? "/\(marker)" : marker) {
                        Issue.record("\(context): the answer shows beta's \(marker)")
                    }
                    if method == .get, answer.status == .ok, !path.contains(Self.beta) {
                        #expect(!answer.body.contains(Self.beta), "\(context): the page names beta's app")
                    }
                }
            }

            // Nothing of beta changed.
            #expect(try await app.store.device(beta.device)?.isActive == true, "beta's device was removed")
            let betaSendID = try #require(SendID(beta.send))
            let send = try #require(try await app.store.send(betaSendID))
            #expect(send.status != .cancelled, "beta's send was cancelled")
            #expect(try await app.store.webhookEndpoints(app: Self.beta).map(\.id.lowercasedText) == [beta.webhook])
            #expect(try await app.store.apiKeys().contains { $0.id.lowercasedText == beta.key && $0.isActive })
            let channels = try await client.call(.get, "/api/channels?topic=\(Self.beta)", bearer: everything.secret.value)
            #expect(channels.body.contains(beta.channel), "beta's channel was deleted: \(channels)")
            #expect(try await app.store.webhookEndpoints(app: Self.alpha).isEmpty, "no endpoint was made")
        }
    }

    @Test("an admin session limited to development finds a production device unknown: its page, and its removal, which once went through")
    func environmentLimitedRemoval() async throws {
        try await ServerHarness.withServer(configure: ScopedKeyTests.twoApps) { client, app in
            let device = testToken(0xBE)
            try await client.register(device, debug: false, extra: #", "topic": "\#(Self.beta)""#)
            let key = try await app.store.createAPIKey(name: "development-admin", scopes: [.admin], environment: .development)
            var session = ConsoleClient(client)
            try await session.signIn(key.secret.value)
            #expect(try await session.call(.get, "/console/devices/\(device.hex)").status == .notFound)
            let removal = try await session.call(
                .post, "/console/devices/\(device.hex)/remove", form: [(ConsoleAuthority.csrfField, session.csrf)])
            #expect(removal.status == .notFound, "\(removal.status)")
            #expect(try await app.store.device(device)?.isActive == true, "the production device was removed")
        }
    }

    @Test("a session limited to development cannot end a Live Activity, whose end reaches both environments: the API refused it, the console once did not")
    func environmentLimitedActivityEnd() async throws {
        try await ServerHarness.withServer(configure: ScopedKeyTests.twoApps) { client, app in
            let everything = try await app.store.createAPIKey(name: "ops", scopes: [.send, .admin])
            let started = try await client.call(
                .post, "/api/activities",
                body: #"{"topic": "\#(Self.alpha)", "activityId": "order-1", "activityType": "DeliveryAttributes", "target": {"user": "nobody"}, "attributes": {}, "contentState": {"eta": 5}, "alert": {"title": "Order", "body": "On its way"}}"#,
                bearer: everything.secret.value)
            #expect(started.status == .ok, "\(started)")
            let key = try await app.store.createAPIKey(
                name: "development-operator", scopes: [.send], apps: [Self.alpha], environment: .development)
            let api = try await client.call(
                .delete, "/api/activities/order-1?topic=\(Self.alpha)", body: #"{"topic": "\#(Self.alpha)"}"#,
                bearer: key.secret.value)
            #expect(api.status == .forbidden, "\(api)")
            var session = ConsoleClient(client)
            try await session.signIn(key.secret.value)
            let end = try await session.call(
                .post, "/console/activities/end",
                form: [(ConsoleAuthority.csrfField, session.csrf), ("app", Self.alpha), ("id", "order-1")])
            #expect(end.status == .forbidden, "\(end.status)")
            #expect(try await app.store.activity(topic: Self.alpha, id: "order-1")?.isActive == true, "the activity was ended")
        }
    }

    @Test("a key limited to an app the server does not serve is refused, by the console as by the API: the console once dropped the app and made a key for every app")
    func keyForUnknownApp() async throws {
        try await ServerHarness.withServer(configure: ScopedKeyTests.twoApps) { client, app in
            let admin = try await app.store.createAPIKey(name: "admin", scopes: [.admin])
            let before = try await app.store.apiKeys().count
            let api = try await client.call(
                .post, "/api/keys", body: #"{"name": "typo", "scopes": ["send"], "apps": ["com.alpha.ap"]}"#,
                bearer: admin.secret.value)
            #expect(api.status == .badRequest && api.reason == "unknownTopic", "\(api)")
            var session = ConsoleClient(client)
            try await session.signIn(admin.secret.value)
            let console = try await session.call(
                .post, "/console/keys",
                form: [(ConsoleAuthority.csrfField, session.csrf), ("name", "typo"), ("scope", "send"), ("app", "com.alpha.ap")])
            #expect(console.status == .badRequest, "\(console.status)")
            #expect(console.body.contains("com.alpha.ap"), "the page says which app")
            #expect(try await app.store.apiKeys().count == before, "a key was made")
        }
    }
}
