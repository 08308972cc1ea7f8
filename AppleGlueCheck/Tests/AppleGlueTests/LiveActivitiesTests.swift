import ActivityKit
import Foundation
import HeraldClient
import HeraldCore
import Testing

/// `LiveActivities` driven through the stand-in ActivityKit: the push-to-start token, each activity's update token
/// and its end reach Herald.
@Suite("Apple glue: LiveActivities", .timeLimit(.minutes(1)))
struct LiveActivitiesTests {
    struct DeliveryAttributes: ActivityAttributes, Sendable {
        struct ContentState: Codable, Hashable, Sendable { var minutes: Int }
        var order: String
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test("a push-to-start token, an activity's update token and the activity's end are told to Herald")
    func tokensAndEnd() async throws {
        let system = ActivityCenter.shared
        system.reset()
        let server = try LoopbackHTTPServer { _, _ in .respond(.json(201, "{}")) }
        defer { server.stop() }
        let storage = InMemoryStorage()
        let client = RegistrationClient(
            configuration: try .init(serverURL: server.baseURL, allowsInsecureHTTP: true), storage: storage)
        let live = await LiveActivities<DeliveryAttributes>(
            configuration: .init(client: client, storage: storage, fallbackEnvironment: .development) { activity in
                activity.attributes.order
            })
        let running = Task { await live.run() }

        let startToken = Data(repeating: 0xAB, count: 32)
        system.issuePushToStartToken(startToken, for: DeliveryAttributes.self)
        await server.waitForRequests(count: 1)
        let start = try #require(server.requests.first)
        #expect(start.method == "POST" && start.path == "/api/token")
        let startBody = String(decoding: start.body, as: UTF8.self)
        #expect(startBody.contains(Self.hex(startToken)) && startBody.contains("DeliveryAttributes"), "\(startBody)")

        await system.waitForStartObserver(of: DeliveryAttributes.self)
        system.start(DeliveryAttributes(order: "A-17"), id: "activity-1")
        let updateToken = Data(repeating: 0xCD, count: 32)
        system.issueUpdateToken(updateToken, toActivity: "activity-1")
        await server.waitForRequests(count: 2)
        let update = String(decoding: server.requests[1].body, as: UTF8.self)
        #expect(update.contains(Self.hex(updateToken)) && update.contains("A-17"), "the app's id of it: \(update)")

        system.end(activity: "activity-1")
        await server.waitForRequests(count: 3)
        let end = server.requests[2]
        #expect(end.method == "DELETE" && end.path == "/api/token/\(Self.hex(updateToken))", "\(end.method) \(end.path)")
        #expect(await MainActor.run { live.lastError.map { "\($0)" } } == nil)
        // The system's sequences end, and so does the glue's run: not cancelled, since cancelling a URLSession request
        // as it completes deadlocks swift-corelibs-foundation (the request to Herald may still be finishing).
        system.reset()
        await running.value
    }
}
