import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird

/// `GET /api/devices` and `GET /api/devices/{token}`: admin lookups (API key with the `admin` scope). A key scoped
/// to apps or an environment finds its own devices only.
struct DeviceController: Sendable {
    let store: any Store
    let apps: AppDirectory

    /// - Parameter group: The routes of the `admin` scope, behind its key check.
    func addRoutes(to group: RouterGroup<ServerRequestContext>) {
        group.get("/api/devices", use: list)
        group.get("/api/devices/{token}", use: show)
    }

    /// One page of the devices of a user, a tag or a topic:
    /// `?user=…|tag=…|topic=…[&environment=…][&includeInvalidated=true][&after=<next>][&limit=…]`.
    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let user = try request.queryParameter("user")
        let tag = try request.queryParameter("tag")
        let topic = try request.queryParameter("topic")
        var query: DeviceQuery
        switch (user, tag) {
        case (let user?, nil): query = .user(user)
        case (nil, let tag?): query = .tag(tag)
        case (nil, nil):
            guard let topic else {
                throw APIError(
                    .badRequest, reason: "missingQuery",
                    "Say which devices: ?user=<id>, ?tag=<tag> or ?topic=<bundle id>.")
            }
            query = .topic(topic)
        default:
            throw APIError.invalidField("user", "give user or tag, not both")
        }
        if let topic {
            try context.access.check(app: topic)
            query = query.inTopic(topic)
        } else if let topics = context.access.topics {
            // A user or a tag may have devices in several apps: a scoped key looks within one of its own.
            guard topics.count == 1, let only = topics.first else {
                throw APIError(
                    .badRequest, reason: "missingTopic",
                    "This API key is for several apps: say which with ?topic=, one of \(topics.sorted().joined(separator: ", ")).")
            }
            query = query.inTopic(only)
        }
        var environment: APNSEnvironment?
        if let name = try request.queryParameter("environment") {
            guard let parsed = APNSEnvironment(name: name) else {
                throw APIError.invalidField("environment", "use development or production")
            }
            environment = parsed
        }
        if let only = context.access.environment {
            try context.access.check(environment: environment ?? only)
            environment = only
        }
        if let environment { query = query.environment(environment) }
        if let flag = try request.queryParameter("includeInvalidated") {
            guard let include = Bool(flag) else {
                throw APIError.invalidField("includeInvalidated", "use true or false")
            }
            query = query.includingInvalidated(include)
        }
        var cursor: DeviceCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty {
            guard let parsed = DeviceCursor(after) else {
                throw APIError.invalidField("after", "use the \"next\" value of the previous page")
            }
            cursor = parsed
        }
        // A viewer (a read-only key) sees a token as its last 8 hex digits, as sends show it to a send-only key.
        let reveal = SendController.revealsTokens(to: context)
        let page = try await store.devices(
            matching: query, after: cursor, limit: try SendController.limit(request.queryParameter("limit")))
        var members: [String: JSONValue] = ["devices": .array(page.devices.map {
            $0.json(includingAdminFields: true, revealingToken: reveal)
        })]
        if let next = page.next { members["next"] = .string(next.description) }
        return .json(.object(members))
    }

    /// One device's registration, active or invalidated.
    @Sendable func show(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let token = try RegistrationBody.parseToken(context.parameters.get("token") ?? "")
        // Another app's device is as unknown as an unregistered one: the token alone must not tell a scoped key it
        // is registered.
        let device = try await VisibleResources(store: store, apps: apps).device(token, for: context.access)
        return .json(device.json(includingAdminFields: true, revealingToken: SendController.revealsTokens(to: context)))
    }
}
