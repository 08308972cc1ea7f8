import ActivityKit
import Foundation
import HeraldClient
import HeraldCore
import Testing

/// `LiveActivities` driven through the stand-in ActivityKit: the push-to-start token, each activity's update token
/// and its end reach Herald, with what the person allows. Serialized: the stand-in system is one, shared.
@Suite("Apple glue: LiveActivities", .serialized, .timeLimit(.minutes(1)))
struct LiveActivitiesTests {
    struct DeliveryAttributes: ActivityAttributes, Sendable {
        struct ContentState: Codable, Hashable, Sendable { var minutes: Int }
        var order: String
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// The glue running against a loopback Herald, the app's id of an activity being its order.
    static func running(against server: LoopbackHTTPServer) async throws
        -> (LiveActivities<DeliveryAttributes>, Task<Void, Never>)
    {
        let storage = InMemoryStorage()
        let client = RegistrationClient(
            configuration: try .init(serverURL: server.baseURL, allowsInsecureHTTP: true), storage: storage)
        let live = await LiveActivities<DeliveryAttributes>(
            configuration: .init(client: client, storage: storage, fallbackEnvironment: .development) { activity in
                activity.attributes.order
            })
        return (live, Task { await live.run() })
    }

    @Test("a push-to-start token, an activity's update token and the activity's end are told to Herald")
    func tokensAndEnd() async throws {
        let system = ActivityCenter.shared
        system.reset()
        let server = try LoopbackHTTPServer { _, _ in .respond(.json(201, "{}")) }
        defer { server.stop() }
        let (live, running) = try await Self.running(against: server)

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

    @Test("what the person allows goes with each token, and a change registers the tokens again")
    func authorization() async throws {
        let system = ActivityCenter.shared
        system.reset()
        system.setAuthorization(.init(activitiesEnabled: true, frequentPushesEnabled: false))
        let server = try LoopbackHTTPServer { _, _ in .respond(.json(201, "{}")) }
        defer { server.stop() }
        let (live, running) = try await Self.running(against: server)

        system.issuePushToStartToken(Data(repeating: 0xA1, count: 32), for: DeliveryAttributes.self)
        await server.waitForRequests(count: 1)
        let first = try JSONValue(parsing: server.requests[0].body)
        #expect(first["activitiesEnabled"] == true && first["frequentPushesEnabled"] == false, "\(first)")

        await system.waitForStartObserver(of: DeliveryAttributes.self)
        system.start(DeliveryAttributes(order: "B-2"), id: "activity-2")
        system.issueUpdateToken(Data(repeating: 0xB2, count: 32), toActivity: "activity-2")
        await server.waitForRequests(count: 2)

        // The person turns Live Activities off in Settings: both tokens are registered again, saying so.
        system.setAuthorization(.init(activitiesEnabled: false, frequentPushesEnabled: false))
        await server.waitForRequests(count: 4)
        let again = try server.requests[2...3].map { try JSONValue(parsing: $0.body) }
        #expect(again.allSatisfy { $0["activitiesEnabled"] == false }, "\(again)")
        #expect(Set(again.compactMap { $0["tokenKind"]?.stringValue }) == ["liveactivity-start", "liveactivity"])
        #expect(again.contains { $0["activityId"] == "B-2" })
        #expect(await MainActor.run { live.lastError.map { "\($0)" } } == nil)
        system.reset()
        await running.value
    }
}
