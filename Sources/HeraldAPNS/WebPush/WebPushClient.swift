import Foundation
public import HeraldCore
public import Logging
import NIOCore
public import ServiceLifecycle
import Synchronization

/// How one Web Push message ended.
public struct WebPushDelivery: Sendable {
    public enum Result: Sendable, Hashable {
        /// `201`: the push service took it.
        case accepted
        /// The push service refused it: its status and reason (`{"reason"}` of its body, or `HTTP<status>`).
        case rejected(status: Int, reason: String)
        /// No answer within the retry policy, or nothing could be sent; says why.
        case failed(message: String)
        /// Given up unanswered because the send was cancelled or the client began to shut down: the push service may
        /// or may not have taken an earlier attempt.
        case cancelled(message: String)
    }

    public let result: Result
    /// Attempts made (1 unless retried).
    public let attempts: Int
    /// Every attempt, once there was a second one (the delivery trace); empty when the first decided.
    public var trail: [APNSAttempt] = []

    /// Whether the subscription is gone (`404`, `410`): it should leave the registry, as a token APNs answered `410`.
    public var subscriptionGone: Bool {
        if case .rejected(let status, _) = result { return status == 404 || status == 410 }
        return false
    }
}

/// Sends Web Push messages (RFC 8030) to subscriptions' push services over the sender's HTTP/2 machinery: one pool of
/// connections per push service (Apple's, Google's, …), the same retry policy, deadlines and metrics as APNs, each
/// message encrypted for its subscription (RFC 8291) and signed with the app's VAPID key (RFC 8292), whose JWT is
/// made once per push service and key and reused for hours, as APNs provider tokens are.
public final class WebPushClient: Service, Sendable {
    public struct Configuration: Sendable {
        /// The push services an endpoint may name: checked again at sending, as the list may have changed since the
        /// subscription was registered.
        public var hosts: PushServiceHosts
        public var trust: APNSClientConfiguration.Trust
        /// Connections per push service.
        public var connectionsPerService: Int
        public var requestTimeout: Duration
        public var retry: RetryPolicy

        public init(
            hosts: PushServiceHosts = .default, trust: APNSClientConfiguration.Trust = .system,
            connectionsPerService: Int = 2, requestTimeout: Duration = .seconds(30), retry: RetryPolicy = RetryPolicy()
        ) {
            self.hosts = hosts
            self.trust = trust
            self.connectionsPerService = connectionsPerService
            self.requestTimeout = requestTimeout
            self.retry = retry
        }
    }

    /// How long a VAPID JWT is valid (push services take at most 24 hours), and how long before its end a new one is
    /// made.
    static let jwtLifetime: TimeInterval = 12 * 3600
    static let jwtRenewal: TimeInterval = 3600

    private struct State {
        var clients: [String: APNSClient] = [:]
        var authorizations: [AuthorizationKey: (header: String, expiresAt: Date)] = [:]
        var closed = false
    }

    public let configuration: Configuration
    private let wallClock: any WallClock
    private let logger: Logger
    private let state = Mutex(State())
    /// Each push service's client as it is made, for ``run()`` to run its pools.
    private let newClients: AsyncStream<APNSClient>
    private let madeContinuation: AsyncStream<APNSClient>.Continuation

    public init(
        configuration: Configuration = Configuration(), wallClock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "herald.webpush", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.configuration = configuration
        self.wallClock = wallClock
        self.logger = logger
        (newClients, madeContinuation) = AsyncStream.makeStream()
    }

    /// Runs the push services' connection pools until a graceful shutdown, then closes them: the service a server's
    /// service group runs.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.runPools() }
            try? await gracefulShutdown()
            await shutdown()
            await group.waitForAll()
        }
    }

    /// Runs the push services' connection pools until ``shutdown()``; sends need it running.
    func runPools() async {
        await withTaskGroup(of: Void.self) { group in
            for await client in newClients { group.addTask { await client.runPools() } }
        }
    }

    /// Runs a client for the duration of `body`, then shuts it down.
    public static func withClient<Result: Sendable>(
        configuration: Configuration = Configuration(), wallClock: any WallClock = SystemWallClock(),
        _ body: (WebPushClient) async throws -> Result
    ) async throws -> Result {
        let client = WebPushClient(configuration: configuration, wallClock: wallClock)
        return try await withRunning(client.runPools, shutdown: client.shutdown) { try await body(client) }
    }

    /// Encrypts, signs and sends one message; never throws: the delivery says how it ended.
    /// - Parameters:
    ///   - key: The app's VAPID key, the one the subscription was made with.
    ///   - subject: The VAPID `sub`, a `mailto:` or `https:` URL.
    public func send(
        _ message: WebPushMessage, to subscription: WebPushSubscription, key: VAPIDKey, subject: String
    ) async -> WebPushDelivery {
        let endpoint = subscription.endpoint
        guard let host = endpoint.host, configuration.hosts.allows(host, port: endpoint.port) else {
            return WebPushDelivery(
                result: .failed(
                    message:
                        "The endpoint's push service \(endpoint.host ?? "?") is no longer on the list of push-service hosts (HERALD_WEB_PUSH_HOSTS): nothing was sent."
                ), attempts: 0)
        }
        let body: [UInt8]
        let authorization: String
        let client: APNSClient
        do {
            body = try WebPushEncryption.encrypt(message.payload, for: subscription.keys)
            authorization = try self.authorization(audience: subscription.audience, key: key, subject: subject)
            client = try await self.client(host: host, port: endpoint.port ?? 443)
        } catch let error as WebPushError {
            return WebPushDelivery(result: .failed(message: error.message), attempts: 0)
        } catch {
            return WebPushDelivery(result: .failed(message: "\(error)"), attempts: 0)
        }
        var path = endpoint.path.isEmpty ? "/" : endpoint.path
        if let query = endpoint.query { path += "?" + query }
        var fields: [APNSHeaderTemplate.Field] = [
            .init(":authority", APNSClient.authority(of: client.configuration.destination)),
            .init("authorization", authorization),
            .init("ttl", String(message.ttl), indexable: false),
            .init("urgency", message.urgency.rawValue),
            .init("content-encoding", "aes128gcm"),
            .init("content-type", "application/octet-stream"),
        ]
        if let topic = message.topic { fields.append(.init("topic", topic, indexable: false)) }
        let template = APNSHeaderTemplate(fields: fields)
        let answer = await client.retriedRequest(
            on: client.pool, template: { _ in template }, target: .resource(.post, path: path),
            requestID: UUID().uuidString.lowercased(), body: ByteBuffer(bytes: body),
            expiration: message.ttl == 0 ? .immediately : nil)
        let attempts = answer.progress.attempts
        let trail = answer.progress.trail
        if answer.interruption == .cancelled || answer.interruption == .shuttingDown {
            return WebPushDelivery(
                result: .cancelled(
                    message: "The push was not sent again: the send was cancelled or the server began to shut down while it waited; the push service may or may not have taken an earlier attempt."
                ), attempts: attempts, trail: trail)
        }
        switch answer.result {
        case .success(let response) where (200...299).contains(response.status):
            return WebPushDelivery(result: .accepted, attempts: attempts, trail: trail)
        case .success(let response):
            let reason = APNSClient.reason(in: response)?.rawValue ?? "HTTP\(response.status)"
            return WebPushDelivery(
                result: .rejected(status: response.status, reason: reason), attempts: attempts, trail: trail)
        case .failure(let error) where error.code == .cancelled:
            return WebPushDelivery(result: .cancelled(message: error.message), attempts: attempts, trail: trail)
        case .failure(let error):
            return WebPushDelivery(
                result: .failed(
                    message: "No answer from \(host) after \(attempts) attempt\(attempts == 1 ? "" : "s")\(answer.history): \(error.message)"
                ), attempts: attempts, trail: trail)
        }
    }

    /// Closes every push service's connections.
    public func shutdown() async {
        let clients = state.withLock { state in
            state.closed = true
            defer { state.clients = [:] }
            return Array(state.clients.values)
        }
        madeContinuation.finish()
        for client in clients { await client.shutdown() }
    }

    /// The VAPID header for a push service and key: made once, reused until an hour before it expires.
    /// What one VAPID header is for: a push service, a key and a subject.
    private struct AuthorizationKey: Hashable {
        let audience: String
        let publicKey: String
        let subject: String
    }

    private func authorization(audience: String, key: VAPIDKey, subject: String) throws(WebPushError) -> String {
        let now = wallClock.now()
        let cacheKey = AuthorizationKey(audience: audience, publicKey: key.publicKeyText, subject: subject)
        if let cached = state.withLock({ $0.authorizations[cacheKey] }),
            cached.expiresAt.timeIntervalSince(now) > Self.jwtRenewal
        {
            return cached.header
        }
        let expiresAt = now.addingTimeInterval(Self.jwtLifetime)
        let header = try key.authorization(audience: audience, subject: subject, expiresAt: expiresAt)
        state.withLock { $0.authorizations[cacheKey] = (header, expiresAt) }
        return header
    }

    /// The pool of one push service, made at its first message.
    private func client(host: String, port: Int) async throws -> APNSClient {
        let name = "\(host.lowercased()):\(port)"
        if let existing = state.withLock({ $0.clients[name] }) { return existing }
        let made = try APNSClient(
            configuration: APNSClientConfiguration(
                destination: .custom(host: host, port: port, environment: .production), credentials: .none,
                trust: configuration.trust, maximumConnections: configuration.connectionsPerService,
                requestTimeout: configuration.requestTimeout, retry: configuration.retry),
            wallClock: wallClock, logger: logger)
        let (client, extra) = state.withLock { state -> (APNSClient?, APNSClient?) in
            guard !state.closed else { return (nil, made) }
            if let raced = state.clients[name] { return (raced, made) }
            state.clients[name] = made
            return (made, nil)
        }
        if client === made { madeContinuation.yield(made) }
        // Made by a message that raced another to the same push service, or after shutdown: closed unused.
        if let extra { await extra.shutdown() }
        guard let client else { throw APNSClientError.configuration("The web push client is shut down: nothing was sent.") }
        return client
    }
}
