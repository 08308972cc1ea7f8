import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// The inspection and control API: plain HTTP/1.1 JSON on its own loopback port (documented in docs/emulator.md).
enum AdminServer {
    static func bind(host: String, port: Int, emulator: APNSEmulator) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(AdminHandler(api: AdminAPI(emulator: emulator)))
                }
            }
            .bind(host: host, port: port).get()
    }
}

/// Collects one HTTP/1.1 request and answers it with the ``AdminAPI``.
final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let api: AdminAPI
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private static let maximumBody = 1 << 20

    init(api: AdminAPI) { self.api = api }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
        case .body(let buffer):
            if body.count + buffer.readableBytes <= Self.maximumBody { body.append(contentsOf: buffer.readableBytesView) }
        case .end:
            guard let head else { return }
            let (status, json) = api.handle(method: head.method.rawValue, uri: head.uri, body: body)
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: "application/json")
            let bytes = json.map { $0.sortedJSONBytes + [0x0A] } ?? []
            headers.add(name: "content-length", value: String(bytes.count))
            let keepAlive = head.isKeepAlive
            if !keepAlive { headers.add(name: "connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: headers))), promise: nil)
            var buffer = context.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { boundContext.value.close(promise: nil) }
            }
            self.head = nil
        }
    }
}

/// The admin routes, as a pure function of method, path and body over an emulator.
struct AdminAPI: Sendable {
    let emulator: APNSEmulator

    func handle(method: String, uri: String, body: [UInt8]) -> (Int, JSONValue?) {
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        let parts = path.split(separator: "/").map(String.init)
        // "/devices/<token>/inbox" routes as "devices/:token/inbox", with the token kept aside; a web push
        // subscription's id likewise.
        let token = parts.count >= 2 && parts[0] == "devices" ? parts[1] : ""
        let subscription = parts.count >= 2 && parts[0] == "subscriptions" ? parts[1] : ""
        var shape = parts
        if !token.isEmpty { shape[1] = ":token" }
        if !subscription.isEmpty { shape[1] = ":id" }
        let route = method + " /" + shape.joined(separator: "/")
        do {
            switch route {
            case "GET /health":
                return (200, ["status": "ok"])
            case "GET /devices":
                return (200, .array(emulator.devices().map(Self.json)))
            case "POST /devices":
                return (201, Self.json(try createDevice(body)))
            case "GET /devices/:token":
                guard let device = emulator.device(try Self.token(token)) else { return Self.notFound(token) }
                return (200, Self.json(device))
            case "DELETE /devices/:token":
                return emulator.removeDevice(try Self.token(token)) ? (204, nil) : Self.notFound(token)
            case "POST /devices/:token/unregister":
                let fields = try Self.object(body, allowEmpty: true)
                let date = fields["timestamp"]?.doubleValue.map { Date(timeIntervalSince1970: $0 / 1000) }
                try emulator.markUnregistered(try Self.token(token), at: date)
                return (200, Self.json(emulator.device(try Self.token(token))!))
            case "POST /devices/:token/expire":
                try emulator.markExpired(try Self.token(token))
                return (200, Self.json(emulator.device(try Self.token(token))!))
            case "POST /devices/:token/reactivate":
                try emulator.reactivate(try Self.token(token))
                return (200, Self.json(emulator.device(try Self.token(token))!))
            case "POST /devices/:token/offline", "POST /devices/:token/online":
                try emulator.setOnline(try Self.token(token), parts[2] == "online")
                return (200, Self.json(emulator.device(try Self.token(token))!))
            case "POST /devices/:token/ignore-starts", "POST /devices/:token/honour-starts":
                try emulator.setStartsActivities(try Self.token(token), parts[2] == "honour-starts")
                return (200, Self.json(emulator.device(try Self.token(token))!))
            case "GET /activities":
                return (200, .array(emulator.startedActivities().map(Self.json)))
            case "GET /devices/:token/inbox":
                return (200, .array(try emulator.inbox(for: try Self.token(token)).map(Self.json)))
            case "DELETE /devices/:token/inbox":
                try emulator.clearInbox(for: try Self.token(token))
                return (204, nil)
            case "POST /devices/:token/subscribe", "POST /devices/:token/unsubscribe":
                let device = try Self.token(token)
                guard let channel = try Self.object(body, allowEmpty: false)["channel"]?.stringValue else {
                    throw EmulatorError(#"The body names the channel: {"channel": "<base64 id>"}."#)
                }
                if parts[2] == "subscribe" { try emulator.subscribe(device, to: channel) } else { try emulator.unsubscribe(device, from: channel) }
                return (200, ["token": .string(device.hex), "channels": .array(try emulator.subscriptions(of: device).map(JSONValue.string))])
            case "GET /devices/:token/subscriptions":
                return (200, .array(try emulator.subscriptions(of: try Self.token(token)).map(JSONValue.string)))
            case "GET /channels":
                return (200, .array(emulator.channels().map(Self.json)))
            case "GET /budget":
                return (200, budget())
            case "PUT /budget":
                let fields = try Self.object(body, allowEmpty: false)
                guard fields.keys.allSatisfy({ $0 == "updatesPerHour" }), let value = fields["updatesPerHour"] else {
                    throw EmulatorError(#"PUT /budget takes {"updatesPerHour": 12} (priority-10 updates per activity and hour), or null for no budget."#)
                }
                if value == .null {
                    try emulator.setLiveActivityBudget(nil)
                } else {
                    guard let number = value.intValue else { throw EmulatorError(#""updatesPerHour" must be a whole number or null."#) }
                    try emulator.setLiveActivityBudget(number)
                }
                return (200, budget())
            case "POST /subscriptions":
                let fields = try Self.object(body, allowEmpty: true)
                guard fields.keys.allSatisfy({ $0 == "applicationServerKey" || $0 == "count" }) else {
                    throw EmulatorError(#"POST /subscriptions takes {} or {"applicationServerKey": "<VAPID public key, base64url>"}, and "count" for many at once."#)
                }
                let key = fields["applicationServerKey"]?.stringValue
                guard let count = fields["count"] else {
                    return (201, Self.json(try emulator.webPush.subscribe(applicationServerKey: key)))
                }
                guard let number = count.intValue else { throw EmulatorError(#""count" must be a whole number."#) }
                // Many at once share one key pair: the keys once, then the endpoints.
                let made = try emulator.webPush.subscribe(applicationServerKey: key, count: number)
                return (
                    201,
                    .object([
                        "keys": .object(["p256dh": .string(made[0].p256dh), "auth": .string(made[0].auth)]),
                        "endpoints": .array(made.map { .string($0.endpoint) }),
                    ])
                )
            case "GET /subscriptions":
                return (200, .array(emulator.webPush.subscriptions().map(Self.json)))
            case "GET /subscriptions/:id":
                guard let found = emulator.webPush.subscription(subscription) else { return Self.unknownSubscription(subscription) }
                return (200, Self.json(found))
            case "GET /subscriptions/:id/messages":
                return (200, .array(try emulator.webPush.messages(subscription).map(Self.json)))
            case "POST /subscriptions/:id/unsubscribe":
                try emulator.webPush.unsubscribe(subscription)
                return (200, Self.json(emulator.webPush.subscription(subscription)!))
            case "DELETE /subscriptions/:id":
                return emulator.webPush.remove(subscription) ? (204, nil) : Self.unknownSubscription(subscription)
            case "GET /counters":
                return (200, Self.json(emulator.counters, webPush: emulator.webPush.counters))
            case "DELETE /counters":
                emulator.resetCounters()
                return (204, nil)
            case "GET /faults":
                return (200, try JSONValue(parsing: Array(JSONEncoder().encode(emulator.faults))))
            case "PUT /faults":
                try emulator.setFaults(try Self.faults(emulator.faults, changedBy: body))
                return (200, try JSONValue(parsing: Array(JSONEncoder().encode(emulator.faults))))
            default:
                return (404, ["error": .string("No route \(method) \(path). See docs/emulator.md for the admin API.")])
            }
        } catch let error as EmulatorError {
            return (400, ["error": .string(error.message)])
        } catch {
            return (400, ["error": .string("\(error)")])
        }
    }

    private func budget() -> JSONValue {
        [
            "updatesPerHour": emulator.liveActivityBudget.map { JSONValue.integer($0) } ?? .null,
            "activities": .array(emulator.liveActivityBudgetUse().map { use -> JSONValue in
                ["token": .string(use.token.hex), "activity": .string(use.activity), "usedThisHour": .integer(use.usedThisHour), "dropped": .integer(use.dropped)]
            }),
        ]
    }

    private func createDevice(_ body: [UInt8]) throws -> VirtualDevice {
        let fields = try Self.object(body, allowEmpty: false)
        guard let environmentName = fields["environment"]?.stringValue, let environment = APNSEnvironment(name: environmentName) else {
            throw EmulatorError("\"environment\" must be \"development\" or \"production\".")
        }
        guard let topic = fields["topic"]?.stringValue else { throw EmulatorError("\"topic\" (the bundle id and push-type suffix) is required.") }
        let token = try fields["token"]?.stringValue.map { try Self.token($0) }
        return try emulator.createDevice(token: token, byteCount: fields["bytes"]?.intValue ?? 32, environment: environment, topic: topic)
    }

    private static func object(_ body: [UInt8], allowEmpty: Bool) throws -> [String: JSONValue] {
        if body.isEmpty, allowEmpty { return [:] }
        guard case .object(let fields)? = try? JSONValue(parsing: body) else { throw EmulatorError("The body must be a JSON object.") }
        return fields
    }

    /// The fault fields `PUT /faults` knows; `goAwayAfterStreams` and `closeAfterStreams` are absent from GET when
    /// off, so they are listed here.
    private static let faultFields = ["tooManyRequests", "internalServerError", "serviceUnavailable", "shutdown",
                                      "goAwayAfterStreams", "closeAfterStreams", "goAwayProbability", "resetProbability",
                                      "noResponseProbability", "refusedStreamProbability", "latency"]

    /// `current` with the fields of the JSON object in `body` replaced: a partial object changes only what it names.
    static func faults(_ current: FaultConfiguration, changedBy body: [UInt8]) throws -> FaultConfiguration {
        guard case .object(let changes)? = try? JSONValue(parsing: body) else {
            throw EmulatorError(#"PUT /faults takes a JSON object of the fields to change, e.g. {"tooManyRequests": 0.1}. GET /faults shows them all."#)
        }
        guard case .object(var merged) = try JSONValue(parsing: Array(JSONEncoder().encode(current))) else {
            throw EmulatorError("The current fault configuration could not be read.")
        }
        for (field, value) in changes {
            guard faultFields.contains(field) else {
                throw EmulatorError("Unknown fault field \"\(field)\"; the fields are \(faultFields.joined(separator: ", ")).")
            }
            merged[field] = value
        }
        do {
            return try JSONDecoder().decode(FaultConfiguration.self, from: Data(JSONValue.object(merged).jsonBytes))
        } catch let error as DecodingError {
            throw EmulatorError("Bad fault configuration: \(describe(error)). GET /faults shows the shape.")
        }
    }

    /// A decoding error as a person reads it: where, and what was expected.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            return keys.isEmpty ? "the body" : "\"" + keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") + "\""
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(path(context)) must be \(Self.name(of: type))"
        case .valueNotFound(let type, let context): return "\(path(context)) must be \(Self.name(of: type)), not null"
        case .keyNotFound(let key, let context): return "\(path(context, key)) is missing"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    private static func name(of type: Any.Type) -> String {
        switch type {
        case is Double.Type, is Int.Type: "a number"
        case is String.Type: "a string"
        default: "an object like GET /faults shows"
        }
    }

    private static func token(_ text: String) throws -> DeviceToken {
        do { return try DeviceToken(hex: text) } catch { throw EmulatorError(error.description) }
    }

    private static func notFound(_ token: String) -> (Int, JSONValue?) {
        (404, ["error": .string("No device with token …\(token.suffix(8)).")])
    }

    static func milliseconds(_ date: Date) -> JSONValue { .integer(Int((date.timeIntervalSince1970 * 1000).rounded(.down))) }

    static func json(_ device: VirtualDevice) -> JSONValue {
        var object: [String: JSONValue] = [
            "token": .string(device.token.hex), "environment": .string(device.environment.name),
            "topic": .string(device.topic), "online": .bool(device.isOnline),
            "startsActivities": .bool(device.startsActivities),
        ]
        switch device.state {
        case .active: object["state"] = "active"
        case .expired: object["state"] = "expired"
        case .unregistered(let since):
            object["state"] = "unregistered"
            object["unregisteredAt"] = milliseconds(since)
        }
        return .object(object)
    }

    static func json(_ started: StartedActivity) -> JSONValue {
        var members: [String: JSONValue] = [
            "token": .string(started.token.hex), "environment": .string(started.environment.name),
            "apnsId": .string(started.apnsID), "startedAt": milliseconds(started.startedAt),
        ]
        if let type = started.attributesType { members["attributesType"] = .string(type) }
        return .object(members)
    }

    static func json(_ entry: InboxEntry) -> JSONValue {
        var object: [String: JSONValue] = [
            "apnsId": .string(entry.apnsID), "topic": .string(entry.topic), "receivedAt": milliseconds(entry.receivedAt),
            "payload": (try? JSONValue(parsing: entry.payload)) ?? .string(entry.payloadString),
        ]
        if let value = entry.pushType { object["pushType"] = .string(value) }
        if let value = entry.priority { object["priority"] = .integer(value) }
        if let value = entry.expiration { object["expiration"] = .integer(value) }
        if let value = entry.collapseID { object["collapseId"] = .string(value) }
        if let value = entry.channelID { object["channelId"] = .string(value) }
        return .object(object)
    }

    static func json(_ channel: EmulatedChannel) -> JSONValue {
        [
            "id": .string(channel.id), "bundleId": .string(channel.bundleID), "environment": .string(channel.environment.name),
            "messageStoragePolicy": .integer(channel.storagePolicy), "subscribers": .array(channel.subscribers.map(JSONValue.string)),
        ]
    }

    private static func unknownSubscription(_ id: String) -> (Int, JSONValue?) {
        (404, ["error": .string("No web push subscription \(id): make one with POST /subscriptions.")])
    }

    /// A subscription as a page hands it to its server (`PushSubscription.toJSON()`), with the emulator's id.
    static func json(_ subscription: WebPushService.Subscription) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(subscription.id), "endpoint": .string(subscription.endpoint),
            "keys": ["p256dh": .string(subscription.p256dh), "auth": .string(subscription.auth)],
            "gone": .bool(subscription.gone), "received": .integer(subscription.received),
        ]
        if let key = subscription.applicationServerKey { object["applicationServerKey"] = .string(key) }
        return .object(object)
    }

    /// A message as the browser got it: the payload as JSON when it is JSON, else as text or base64url.
    static func json(_ message: WebPushService.Message) -> JSONValue {
        var object: [String: JSONValue] = [
            "receivedAt": .string(RFC3339.string(message.receivedAt)), "ttl": .integer(message.ttl),
            "urgency": .string(message.urgency), "subject": .string(message.subject),
        ]
        if let topic = message.topic { object["topic"] = .string(topic) }
        if let json = try? JSONValue(parsing: message.payload) {
            object["payload"] = json
        } else if let text = String(validating: message.payload, as: UTF8.self) {
            object["text"] = .string(text)
        } else {
            object["base64"] = .string(Base64URL.encode(message.payload))
        }
        return .object(object)
    }

    static func json(_ counters: EmulatorCounters, webPush: WebPushService.Counters? = nil) -> JSONValue {
        guard let webPush, case .object(var object) = json(counters) else { return json(counters) }
        object["webPush"] = [
            "accepted": .integer(webPush.accepted), "rejected": .object(webPush.rejected.mapValues { .integer($0) }),
        ]
        return .object(object)
    }

    static func json(_ counters: EmulatorCounters) -> JSONValue {
        [
            "accepted": .integer(counters.accepted),
            "rejected": .object(counters.rejected.mapValues { .integer($0) }),
            "totalRejected": .integer(counters.totalRejected),
            "duplicateApnsIds": .integer(counters.duplicateAPNSIDs),
            "droppedFromInbox": .integer(counters.droppedFromInbox),
            "connections": .integer(counters.connections),
            "goAways": .integer(counters.goAways),
            "faults": .object(counters.faults.mapValues { .integer($0) }),
            "broadcasts": .integer(counters.broadcasts),
            "broadcastDeliveries": .integer(counters.broadcastDeliveries),
            "channelRequests": .integer(counters.channelRequests),
            "liveActivityBudgetDropped": .integer(counters.liveActivityBudgetDropped),
            "clientResets": .integer(counters.clientResets),
            "activitiesStarted": .integer(counters.activitiesStarted),
            "pushToStartsIgnored": .integer(counters.pushToStartsIgnored),
        ]
    }
}
