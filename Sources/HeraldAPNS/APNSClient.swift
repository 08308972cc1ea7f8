import Foundation
public import HeraldCore
import NIOCore
import NIOHPACK
import NIOSSL
public import ServiceLifecycle
import Synchronization

/// Sends notifications to one APNs destination over a pool of HTTP/2 connections.
///
/// Run it as a `Service` (or with ``withClient(configuration:clock:randomSeed:_:)``); then call
/// ``send(_:to:)-(PreparedNotification,_)`` from any task, or ``sendAll(_:maximumInFlight:onDelivery:)`` to stream
/// many. Every call ends in an ``APNSDelivery``: accepted, rejected with APNs' reason, or failed after the retry
/// policy ran out; nothing is lost silently and retries keep the same `apns-id`.
public final class APNSClient: Service, Sendable {
    public let configuration: APNSClientConfiguration
    private let pool: ConnectionPool
    private let clock: any Clock<Duration>
    private let random: Mutex<SeededRandomNumberGenerator>
    private let metrics = APNSMetrics()
    private let authority: String

    /// Prepares a client; no connection is opened until the first send.
    /// - Parameters:
    ///   - clock: what backoff sleeps on; tests pass a manual clock so they never wait.
    ///   - randomSeed: seeds the backoff jitter (random by default).
    /// - Throws: ``APNSClientError`` (`configuration`) when the credentials or trust roots cannot be loaded.
    public init(configuration: APNSClientConfiguration, clock: any Clock<Duration> = ContinuousClock(), randomSeed: UInt64? = nil) throws(APNSClientError) {
        guard configuration.maximumConnections >= 1 else { throw .configuration("maximumConnections must be at least 1.") }
        self.configuration = configuration
        self.clock = clock
        self.random = Mutex(SeededRandomNumberGenerator(seed: randomSeed ?? UInt64.random(in: .min ... .max)))
        self.authority = configuration.destination.port == 443 ? configuration.destination.host : "\(configuration.destination.host):\(configuration.destination.port)"
        let sslContext = try Self.makeSSLContext(configuration)
        pool = ConnectionPool(configuration: configuration, sslContext: sslContext, metrics: metrics)
    }

    private static func makeSSLContext(_ configuration: APNSClientConfiguration) throws(APNSClientError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        do {
            switch configuration.trust {
            case .system:
                break
            case .systemAnd(let pem):
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))]
            case .only(let pem):
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            }
        } catch {
            throw .configuration("The CA certificates are not PEM certificates: \(error).")
        }
        do {
            switch configuration.credentials.kind {
            case .token:
                break
            case .certificate(let chainPEM, let keyPEM):
                tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(chainPEM.utf8)).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem))
            case .pkcs12(let data, let passphrase):
                let bundle = try NIOSSLPKCS12Bundle(buffer: data, passphrase: passphrase.map { Array($0.utf8) })
                tls.certificateChain = bundle.certificateChain.map { .certificate($0) }
                tls.privateKey = .privateKey(bundle.privateKey)
            }
        } catch {
            throw .configuration("The client certificate cannot be loaded (\(error)): export it as PEM (certificate and key) or as a .p12 with its password.")
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw .configuration("TLS cannot be set up: \(error).")
        }
    }

    // MARK: Lifecycle

    /// Runs the connection pool until the task is cancelled or a graceful shutdown is triggered; then closes
    /// every connection. Sends in flight when shutdown begins end with their outcome or a `shutdown` failure.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.pool.run() }
            try? await gracefulShutdown()
            await pool.shutdown()
            await group.waitForAll()
        }
    }

    /// Runs a client for the duration of `body`, then shuts it down.
    public static func withClient<Result: Sendable>(
        configuration: APNSClientConfiguration, clock: any Clock<Duration> = ContinuousClock(), randomSeed: UInt64? = nil,
        _ body: (APNSClient) async throws -> Result
    ) async throws -> Result {
        let client = try APNSClient(configuration: configuration, clock: clock, randomSeed: randomSeed)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.pool.run() }
            do {
                let result = try await body(client)
                await client.pool.shutdown()
                try await group.waitForAll()
                return result
            } catch {
                await client.pool.shutdown()
                try? await group.waitForAll()
                throw error
            }
        }
    }

    /// Stops taking work and closes every connection.
    public func shutdown() async { await pool.shutdown() }

    /// Connections currently open or opening.
    public var connectionCount: Int { pool.connectionCount }

    // MARK: Sending

    /// Validates and sends one notification.
    /// - Throws: ``NotificationValidationError`` when the notification breaks an APNs rule; nothing is sent.
    public func send(_ notification: PushNotification, to token: DeviceToken) async throws(NotificationValidationError) -> APNSDelivery {
        await send(try notification.prepare(), to: token)
    }

    /// Sends one prepared notification, retrying as the policy allows, and returns how it ended.
    public func send(_ notification: PreparedNotification, to token: DeviceToken) async -> APNSDelivery {
        await send(notification, body: ByteBuffer(bytes: notification.body), to: token)
    }

    /// Sends many notifications with at most `maximumInFlight` at once, calling `onDelivery` for each outcome as it
    /// comes. Memory stays bounded: the next notification is taken only when a slot is free, and `onDelivery` is
    /// awaited before more are taken, so a slow consumer slows the sender instead of queueing results.
    public func sendAll<Notifications: AsyncSequence>(
        _ notifications: Notifications, maximumInFlight: Int = 1000,
        onDelivery: (APNSDelivery) async throws -> Void
    ) async throws where Notifications.Element == (PreparedNotification, DeviceToken) {
        precondition(maximumInFlight >= 1, "maximumInFlight must be at least 1")
        var bodies: (PreparedNotification, ByteBuffer)?
        try await withThrowingTaskGroup(of: APNSDelivery.self) { group in
            var inFlight = 0
            for try await (notification, token) in notifications {
                if inFlight >= maximumInFlight, let delivery = try await group.next() {
                    inFlight -= 1
                    try await onDelivery(delivery)
                }
                // A fan-out sends one body to many devices: encode the buffer once and share it (copy on write).
                let body: ByteBuffer
                if let cached = bodies, cached.0 == notification {
                    body = cached.1
                } else {
                    body = ByteBuffer(bytes: notification.body)
                    bodies = (notification, body)
                }
                group.addTask { await self.send(notification, body: body, to: token) }
                inFlight += 1
            }
            for try await delivery in group { try await onDelivery(delivery) }
        }
    }

    /// ``sendAll(_:maximumInFlight:onDelivery:)`` for notifications already in memory.
    public func sendAll(
        _ notifications: some Sequence<(PreparedNotification, DeviceToken)> & Sendable, maximumInFlight: Int = 1000,
        onDelivery: (APNSDelivery) async throws -> Void
    ) async throws {
        try await sendAll(SequenceOfNotifications(base: notifications), maximumInFlight: maximumInFlight, onDelivery: onDelivery)
    }

    private func send(_ notification: PreparedNotification, body: ByteBuffer, to token: DeviceToken) async -> APNSDelivery {
        let apnsID = notification.apnsID?.headerValue ?? UUID().uuidString.lowercased()
        let tokens = configuration.credentials.tokenCache
        var providerToken = tokens?.currentToken()
        var refreshed = false
        var attempt = 0
        while true {
            attempt += 1
            if attempt > 1 { metrics.retry() }
            let result = await attemptOnce(notification, body: body, token: token, apnsID: apnsID, authorization: providerToken?.authorizationHeader)
            switch result {
            case .success(let response) where response.status == 200:
                metrics.accept()
                return APNSDelivery(token: token, apnsID: apnsID, outcome: .accepted(apnsID: response.apnsID ?? apnsID, uniqueID: response.uniqueID), attempts: attempt)
            case .success(let response):
                let rejection = Self.rejection(from: response, apnsID: apnsID)
                metrics.reject(reason: rejection.reason.rawValue)
                let retryable = attempt < configuration.retry.maximumAttempts
                switch rejection.reason.retry {
                case .afterRefreshingProviderToken where !refreshed && retryable:
                    if let tokens, let used = providerToken {
                        providerToken = tokens.refreshedToken(replacing: used)
                        metrics.refreshedJWT()
                        refreshed = true
                        continue
                    }
                case .withBackoff where retryable, .onAnotherConnection where retryable:
                    if await backoff(after: attempt) { continue }
                default:
                    break
                }
                return APNSDelivery(token: token, apnsID: apnsID, outcome: .rejected(rejection), attempts: attempt)
            case .failure(let error):
                if error.isRetryable, attempt < configuration.retry.maximumAttempts {
                    // A stream APNs never processed goes out again at once on another stream; anything else waits.
                    if error.code == .notProcessed { continue }
                    if await backoff(after: attempt) { continue }
                }
                metrics.fail()
                return APNSDelivery(token: token, apnsID: apnsID, outcome: .failed(error), attempts: attempt)
            }
        }
    }

    private func attemptOnce(_ notification: PreparedNotification, body: ByteBuffer, token: DeviceToken, apnsID: String, authorization: String?) async -> Result<APNSResponse, APNSClientError> {
        let lease: ConnectionPool.Lease
        do {
            lease = try await pool.lease()
        } catch let error as APNSClientError {
            return .failure(error)
        } catch {
            return .failure(APNSClientError(.shutdown, "The send was cancelled before a connection was free."))
        }
        metrics.attempt()
        let started = ContinuousClock.now
        defer {
            let elapsed = started.duration(to: .now)
            metrics.answered(after: elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        }
        do {
            let response = try await lease.connection.execute(headers: headers(notification, token: token, apnsID: apnsID, authorization: authorization), body: body)
            if response.status != 200, let reason = Self.reason(in: response),
                reason.retry == .onAnotherConnection || reason == .unrelatedKeyIDInToken
            {
                pool.retire(lease.connection)
            }
            pool.release(lease)
            return .success(response)
        } catch {
            pool.release(lease)
            return .failure((error as? APNSClientError) ?? APNSClientError(.connectionClosed, "The connection failed: \(error)."))
        }
    }

    /// Sleeps the backoff; `false` when the task was cancelled meanwhile.
    private func backoff(after attempt: Int) async -> Bool {
        let delay = random.withLock { configuration.retry.backoff(after: attempt, using: &$0) }
        do {
            try await clock.sleep(for: delay)
            return true
        } catch {
            return false
        }
    }

    private func headers(_ notification: PreparedNotification, token: DeviceToken, apnsID: String, authorization: String?) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        // Unique per device and per notification: indexing them would only churn APNs' small HPACK table.
        headers.add(name: ":path", value: "/3/device/" + token.hex, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
        headers.add(name: "apns-push-type", value: notification.pushType.rawValue)
        headers.add(name: "apns-topic", value: notification.topic)
        if let priority = notification.priority { headers.add(name: "apns-priority", value: String(priority.rawValue)) }
        if let expiration = notification.expiration { headers.add(name: "apns-expiration", value: String(expiration.secondsSince1970)) }
        if let collapseID = notification.collapseID { headers.add(name: "apns-collapse-id", value: collapseID) }
        return headers
    }

    private static func reason(in response: APNSResponse) -> APNSReason? {
        guard let body = response.body, let json = try? JSONValue(parsing: body.readableBytesView) else { return nil }
        return json["reason"]?.stringValue.map(APNSReason.init(rawValue:))
    }

    /// Decodes an error response; an empty or non-JSON body still keeps the status and apns-id.
    static func rejection(from response: APNSResponse, apnsID: String) -> APNSRejection {
        var reason = APNSReason(rawValue: "HTTP\(response.status)")
        var timestamp: Date?
        if let body = response.body, let json = try? JSONValue(parsing: body.readableBytesView) {
            if let text = json["reason"]?.stringValue { reason = APNSReason(rawValue: text) }
            if let milliseconds = json["timestamp"]?.doubleValue { timestamp = Date(timeIntervalSince1970: milliseconds / 1000) }
        }
        return APNSRejection(status: response.status, reason: reason, timestamp: timestamp, apnsID: response.apnsID ?? apnsID, uniqueID: response.uniqueID)
    }
}

/// An in-memory sequence presented as the `AsyncSequence` the bulk API consumes.
private struct SequenceOfNotifications<Base: Sequence<(PreparedNotification, DeviceToken)> & Sendable>: AsyncSequence, Sendable {
    let base: Base

    struct AsyncIterator: AsyncIteratorProtocol {
        var iterator: Base.Iterator
        mutating func next() async -> (PreparedNotification, DeviceToken)? { iterator.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(iterator: base.makeIterator()) }
}
