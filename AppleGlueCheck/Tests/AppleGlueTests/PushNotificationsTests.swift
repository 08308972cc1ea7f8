import Foundation
import HeraldClient
import HeraldCore
import Synchronization
import Testing
import UserNotifications

/// `PushNotifications` driven through the stand-ins: what it asks of the system at launch, what it forwards to Herald,
/// and how it presents and reports what arrives. Serialized: the notification center and the application are the
/// system's one instance each. The glue is main-actor isolated; the system calls its delegate from any thread, as
/// these tests do.
@Suite("Apple glue: PushNotifications", .serialized, .timeLimit(.minutes(1)))
struct PushNotificationsTests {
    static let token = Data((0..<32).map { UInt8($0) })

    /// A `PushNotifications` over a client of `server`, on a new launch of the system.
    @MainActor
    static func glue(
        _ server: LoopbackHTTPServer, categories: [NotificationCategory] = [], events: EventLog? = nil
    ) throws -> PushNotifications {
        UNUserNotificationCenter.current().reset()
        Application.relaunch()
        let storage = InMemoryStorage()
        let client = RegistrationClient(
            configuration: try .init(serverURL: server.baseURL, allowsInsecureHTTP: true), storage: storage)
        return PushNotifications(
            configuration: .init(
                client: client, storage: storage, fallbackEnvironment: .development, categories: categories)
        ) { event in events?.append(event) }
    }

    /// A loopback Herald that answers every request with `reply`.
    static func server(_ reply: LoopbackHTTPServer.Response = .json(201, "{}")) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { _, _ in .respond(reply) }
    }

    static func notification(_ userInfo: [AnyHashable: Any], category: String = "") -> UNNotification {
        let content = UNMutableNotificationContent()
        content.userInfo = userInfo
        content.categoryIdentifier = category
        return UNNotification(request: UNNotificationRequest(identifier: UUID().uuidString, content: content, trigger: nil))
    }

    @Test("start: the delegate is set, permission asked once with the options, the categories registered, a token asked for")
    func start() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let reply = NotificationCategory(
            identifier: "reply", actions: [NotificationAction(identifier: "like", title: "Like")],
            options: [.customDismissAction])
        let push = try await Self.glue(server, categories: [reply])
        let center = UNUserNotificationCenter.current()
        #expect(await push.start())
        #expect(center.delegate != nil)
        #expect(center.authorizationRequests == [[.alert, .sound, .badge]])
        let categories = await center.notificationCategories()
        #expect(categories.map(\.identifier) == ["reply"])
        #expect(categories.first?.actions.map(\.identifier) == ["like"])
        #expect(categories.first?.options == [.customDismissAction])
        #expect(await Application.tokenRequests == 1)
    }

    @Test("start when permission is refused: no permission, but a token is asked for all the same (silent pushes)")
    func refused() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let push = try await Self.glue(server)
        UNUserNotificationCenter.current().answerAuthorization(with: .success(false))
        #expect(await push.start() == false)
        #expect(await Application.tokenRequests == 1)
    }

    @Test("the token APNs hands out at each launch is forwarded to Herald, in the environment resolved")
    func tokenForwarded() async throws {
        let server = try Self.server()
        defer { server.stop() }
        for _ in 0..<2 {
            let push = try await Self.glue(server)
            await push.start()
            await push.didRegister(deviceToken: Self.token)
            let failure = await MainActor.run { push.lastError.map { "\($0)" } }
            #expect(failure == nil)
            #expect(await push.token?.hex == Self.token.map { String(format: "%02x", $0) }.joined())
        }
        let registrations = server.requests.filter { $0.method == "POST" && $0.path == "/api/token" }
        #expect(registrations.count == 2, "once per launch")
        let body = try #require(registrations.first.flatMap { String(data: $0.body, encoding: .utf8) })
        #expect(body.contains("development"), "\(body)")
    }

    @Test("a notification in the foreground is presented as configured and handed to the app")
    func foreground() async throws {
        let server = try Self.server(.json(200, #"{"recorded":1,"duplicates":0,"ignored":0}"#))
        defer { server.stop() }
        let events = EventLog()
        let push = try await Self.glue(server, events: events)
        await push.start()
        let center = UNUserNotificationCenter.current()
        let delegate = try #require(center.delegate)
        let presentation = await delegate.userNotificationCenter(
            center, willPresent: Self.notification(["aps": ["alert": "Hello"]]))
        #expect(presentation == [.list, .banner, .sound, .badge])
        guard case .willPresent(let payload)? = events.all.first else {
            Issue.record("no willPresent event: \(events.all)")
            return
        }
        #expect(payload.aps.alert == .body("Hello"))
    }

    @Test("a tap on an action reaches the app as that action of its category")
    func response() async throws {
        let server = try Self.server(.json(200, "{}"))
        defer { server.stop() }
        let events = EventLog()
        let like = NotificationAction(identifier: "like", title: "Like")
        let push = try await Self.glue(
            server, categories: [NotificationCategory(identifier: "post", actions: [like])], events: events)
        await push.start()
        let center = UNUserNotificationCenter.current()
        let delegate = try #require(center.delegate)
        let notification = Self.notification(["aps": ["alert": "New post", "category": "post"]], category: "post")
        await delegate.userNotificationCenter(
            center, didReceive: UNNotificationResponse(notification: notification, actionIdentifier: "like"))
        let actions = events.all.compactMap { event -> NotificationResponseAction? in
            if case .response(_, let action) = event { action } else { nil }
        }
        #expect(actions == [.action(like)])
    }
}

/// What the glue handed the app.
final class EventLog: Sendable {
    private let events = Mutex<[NotificationEvent]>([])

    func append(_ event: NotificationEvent) { events.withLock { $0.append(event) } }

    var all: [NotificationEvent] { events.withLock { $0 } }
}
