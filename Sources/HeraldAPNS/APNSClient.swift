import Foundation
public import HeraldCore
public import Logging
import NIOCore
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
    let pool: ConnectionPool
    /// Connections to the broadcast host and to the channel-management host: one each, opened on first use.
    let broadcastPool: ConnectionPool
    let channelManagementPool: ConnectionPool
    private let clock: any Clock<Duration>
    /// The time on `clock` since the client was made: when retry windows start and end.
    let clockTime: @Sendable () -> Duration
    /// Where the client reads the date, to keep retries before a notification's `apns-expiration`.
    let wallClock: any WallClock
    let random: Mutex<SeededRandomNumberGenerator>
    let metrics = APNSMetrics()
    private let authority: String
    let ids = APNSIDGenerator()
    /// Where channel operations report what they did; device pushes report through metrics and outcomes.
    let logger: Logger
    private let lastSharedParts = Mutex<SharedParts?>(nil)

    /// Prepares a client; no connection is opened until the first send.
    /// - Parameters:
    ///   - clock: what backoff sleeps on and the retry window is measured on; tests pass a manual clock so they never
    ///     wait.
    ///   - wallClock: where the date is read, to retry nothing past its `apns-expiration`; the system's by default.
    ///   - randomSeed: seeds the backoff jitter (random by default).
    ///   - logger: where channel operations log (created, deleted, refused); nothing by default.
    /// - Throws: ``APNSClientError`` (`configuration`) when the credentials or trust roots cannot be loaded.
    public init(
        configuration: APNSClientConfiguration, clock: any Clock<Duration> = ContinuousClock(),
        wallClock: any WallClock = SystemWallClock(), randomSeed: UInt64? = nil,
        logger: Logger = Logger(label: "herald.apns", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(APNSClientError) {
        self.logger = logger
        guard configuration.maximumConnections >= 1 else { throw .configuration("maximumConnections must be at least 1.") }
        for (name, other) in [("broadcastDestination", configuration.broadcastDestination),
                              ("channelManagementDestination", configuration.channelManagementDestination)]
        where other.environment != configuration.destination.environment {
            throw .configuration("\(name) is \(other) but destination is \(configuration.destination): use one environment for all three.")
        }
        self.configuration = configuration
        self.clock = clock
        self.clockTime = Self.stopwatch(clock)
        self.wallClock = wallClock
        self.random = Mutex(SeededRandomNumberGenerator(seed: randomSeed ?? UInt64.random(in: .min ... .max)))
        self.authority = Self.authority(of: configuration.destination)
        let sslContext = try Self.makeSSLContext(configuration)
        pool = ConnectionPool(configuration: configuration, sslContext: sslContext, metrics: metrics)
        broadcastPool = ConnectionPool(
            configuration: configuration.oneConnection(to: configuration.broadcastDestination), sslContext: sslContext, metrics: metrics)
        channelManagementPool = ConnectionPool(
            configuration: configuration.oneConnection(to: configuration.channelManagementDestination), sslContext: sslContext, metrics: metrics)
    }

    /// The time on `clock` since now, read without knowing the clock's `Instant`.
    private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }

    /// The `:authority` of requests to a destination: the host, and the port unless it is 443.
    static func authority(of destination: APNSClientConfiguration.Destination) -> String {
        destination.port == 443 ? destination.host : "\(destination.host):\(destination.port)"
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
            case .token, .none:
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
            for pool in pools { group.addTask { await pool.run() } }
            try? await gracefulShutdown()
            await shutdown()
            await group.waitForAll()
        }
    }

    /// Every pool: device pushes, broadcasts, channel management. The last two open nothing until first used.
    private var pools: [ConnectionPool] { [pool, broadcastPool, channelManagementPool] }

    /// Runs every pool until ``shutdown()``, for an owner that runs the client inside its own task group (the Web Push
    /// client, one APNs-style client per push service).
    func runPools() async {
        await withTaskGroup(of: Void.self) { group in
            for pool in pools { group.addTask { await pool.run() } }
        }
    }

    /// Runs a client for the duration of `body`, then shuts it down.
    public static func withClient<Result: Sendable>(
        configuration: APNSClientConfiguration, clock: any Clock<Duration> = ContinuousClock(),
        wallClock: any WallClock = SystemWallClock(), randomSeed: UInt64? = nil,
        logger: Logger = Logger(label: "herald.apns", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (APNSClient) async throws -> Result
    ) async throws -> Result {
        let client = try APNSClient(
            configuration: configuration, clock: clock, wallClock: wallClock, randomSeed: randomSeed, logger: logger)
        return try await withRunning(client.runPools, shutdown: client.shutdown) { try await body(client) }
    }

    /// Stops taking work and closes every connection.
    public func shutdown() async {
        for pool in pools { await pool.shutdown() }
    }

    /// Connections currently open or opening.
    public var connectionCount: Int { pool.connectionCount }

    /// Its latency over the last 24 hours and its open connections, for the console.
    public var statistics: APNSClientStatistics { metrics.statistics }

    /// The most streams one connection carried at once so far, for tests.
    var mostStreamsOnOneConnection: Int { pool.mostStreamsOnOneConnection }

    // MARK: Sending

    /// Validates and sends one notification.
    /// - Throws: ``NotificationValidationError`` when the notification breaks an APNs rule; nothing is sent.
    public func send(_ notification: PushNotification, to token: DeviceToken) async throws(NotificationValidationError) -> APNSDelivery {
        await send(try notification.prepare(), to: token)
    }

    /// Sends one prepared notification, retrying as the policy allows, and returns how it ended.
    public func send(_ notification: PreparedNotification, to token: DeviceToken) async -> APNSDelivery {
        let providerToken = configuration.credentials.tokenCache?.currentToken()
        let shared = sharedParts(notification, providerToken: providerToken)
        return await deliver(Send(
            notification: notification, body: shared.body, token: token, apnsID: notification.apnsID?.headerValue ?? ids.next(),
            providerToken: providerToken, template: shared.template))
    }

    /// Starts sending one prepared notification without a task, for bulk loops (``APNSBulkSend``): if a connection has
    /// a free stream right now, the request is written and `answered` is called once, on an event loop, with how it
    /// ended or with the retry to run in a task. It must not block.
    ///
    /// Such a send has no task to cancel: `cancellation` cancels it instead (``APNSCancellation``), and it then ends
    /// ``APNSClientError/Code/cancelled``. A retry handed back as `.continuing` runs in the caller's task and answers
    /// that task's cancellation.
    /// - Returns: `false` when no stream is free (or no connection is open yet): nothing was sent, and the caller
    ///   should use ``send(_:to:)-(PreparedNotification,_)`` from a task instead, which waits for one.
    public func startSending(
        _ notification: PreparedNotification, to token: DeviceToken, cancellation: APNSCancellation? = nil,
        answered: @escaping @Sendable (APNSStarted<APNSDelivery>) -> Void
    ) -> Bool {
        let providerToken = configuration.credentials.tokenCache?.currentToken()
        let shared = sharedParts(notification, providerToken: providerToken)
        return startAttempt(
            Send(
                notification: notification, body: shared.body, token: token,
                apnsID: notification.apnsID?.headerValue ?? ids.next(), providerToken: providerToken,
                template: shared.template),
            cancellation: cancellation, answered: answered)
    }

    /// Sends many notifications with at most `maximumInFlight` at once, calling `onDelivery` for each outcome as it
    /// comes: the simplest driver of ``bulkSend(permits:answered:)``, for `herald send --repeat`. Memory stays bounded:
    /// the next notification is taken only when a permit is free, and `onDelivery` is awaited before more are taken,
    /// so a slow consumer slows the sender instead of queueing results.
    ///
    /// No task is made per notification: while a connection has a free stream, a notification goes straight to it
    /// and its answer comes back through a queue this task drains in batches. Only a notification that must wait
    /// (for a connection, or to be retried) gets a child task.
    public func sendAll<Notifications: AsyncSequence>(
        _ notifications: Notifications, maximumInFlight: Int = 1000,
        onDelivery: (APNSDelivery) async throws -> Void
    ) async throws where Notifications.Element == (PreparedNotification, DeviceToken) {
        precondition(maximumInFlight >= 1, "maximumInFlight must be at least 1")
        typealias Bulk = APNSBulkSend<APNSBulkItem<Void>, APNSDelivery>
        let answers = BatchQueue<Bulk.Answer>()
        var bulk: Bulk = bulkSend(permits: maximumInFlight) { answers.push($0) }
        let cancellation = bulk.cancellation
        // Cancelled, the loop ends at its next wait and the group cancels its tasks; the requests written without a
        // task are reset rather than left holding their streams.
        try await withTaskCancellationHandler {
            try await withThrowingDiscardingTaskGroup { group in
                func settle() async throws {
                    for answer in try await answers.take() {
                        guard let delivery = bulk.outcome(of: answer, in: &group) else { continue }
                        bulk.finished(1)
                        try await onDelivery(delivery)
                    }
                }
                for try await (notification, token) in notifications {
                    while !bulk.hasPermit { try await settle() }
                    bulk.start(APNSBulkItem(notification, to: token, context: ()), in: &group)
                }
                while bulk.inFlight > 0 { try await settle() }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// ``sendAll(_:maximumInFlight:onDelivery:)`` for notifications already in memory.
    public func sendAll(
        _ notifications: some Sequence<(PreparedNotification, DeviceToken)> & Sendable, maximumInFlight: Int = 1000,
        onDelivery: (APNSDelivery) async throws -> Void
    ) async throws {
        try await sendAll(SequenceOfNotifications(base: notifications), maximumInFlight: maximumInFlight, onDelivery: onDelivery)
    }

    // MARK: One notification

    /// One notification on its way: what is sent, and how far its retry policy has come.
    struct Send: Sendable {
        let notification: PreparedNotification
        let body: ByteBuffer
        let token: DeviceToken
        /// The same on every attempt.
        let apnsID: String
        var template: APNSHeaderTemplate
        var progress: RetryProgress

        init(notification: PreparedNotification, body: ByteBuffer, token: DeviceToken, apnsID: String, providerToken: ProviderToken?,
             template: APNSHeaderTemplate) {
            self.notification = notification
            self.body = body
            self.token = token
            self.apnsID = apnsID
            self.template = template
            self.progress = RetryProgress(providerToken: providerToken)
        }

        var attempts: Int {
            get { progress.attempts }
            set { progress.attempts = newValue }
        }
    }

    /// What one attempt's result means for the notification.
    enum Verdict {
        case final(APNSDelivery)
        /// Send again after `delay` (zero: at once); `otherwise` is how it ends if the retry cannot happen.
        case retry(after: Duration, otherwise: APNSDelivery)
    }

    /// Attempts until the notification is accepted, rejected for good, or its retry policy stops.
    private func deliver(_ send: Send) async -> APNSDelivery {
        var send = send
        while true {
            let result = await attempt(&send)
            switch judge(result, &send) {
            case .final(let delivery):
                return delivery
            case .retry(let delay, let otherwise):
                if let end = await stopped(pausing: delay, otherwise) { return end }
            }
        }
    }

    private func attempt(_ send: inout Send) async -> Result<APNSResponse, APNSClientError> {
        await attempt(on: pool, template: send.template, target: .device(send.token), requestID: send.apnsID, body: send.body, progress: &send.progress)
    }

    /// One attempt of any request on one of the pools: waits for a stream slot, sends, and gives the slot back.
    func attempt(
        on pool: ConnectionPool, template: APNSHeaderTemplate, target: APNSRequestTarget, requestID: String, body: ByteBuffer,
        progress: inout RetryProgress
    ) async -> Result<APNSResponse, APNSClientError> {
        progress.begin(at: clockTime())
        if progress.attempts > 1 { metrics.retry() }
        let lease: ConnectionPool.Lease
        do {
            lease = try await pool.lease()
        } catch let error as APNSClientError {
            return .failure(error)
        } catch {
            return .failure(APNSClientError(
                .cancelled, "The request was cancelled while it waited for a free stream: it was never sent."))
        }
        metrics.attempt()
        progress.connection = lease.connection.id
        let started = ContinuousClock.now
        let result = await lease.connection.execute(template: template, target: target, requestID: requestID, body: body)
        finish(lease, of: pool, started: started, result)
        return result
    }

    /// Starts an attempt without a task if a stream is free right now; `answered` gets its verdict on the event loop.
    /// - Returns: `false` when every stream is taken: the caller must wait for one.
    private func startAttempt(
        _ send: Send, cancellation: APNSCancellation?, answered: @escaping @Sendable (APNSStarted<APNSDelivery>) -> Void
    ) -> Bool {
        guard let lease = pool.tryLease() else { return false }
        var attempting = send
        attempting.progress.begin(at: clockTime())
        if attempting.attempts > 1 { metrics.retry() }
        metrics.attempt()
        attempting.progress.connection = lease.connection.id
        let started = ContinuousClock.now
        let sent = attempting
        let request = APNSStreamRequest(
            template: sent.template, token: sent.token, apnsID: sent.apnsID, body: sent.body, cancellation: cancellation
        ) { result in
            self.finish(lease, of: self.pool, started: started, result)
            var send = sent
            switch self.judge(result, &send) {
            case .final(let delivery): answered(.finished(delivery))
            case .retry(let delay, let otherwise):
                let retrying = send
                answered(.continuing { await self.continueRetry(retrying, delay: delay, otherwise: otherwise) })
            }
        }
        lease.connection.submit(request)
        return true
    }

    /// The rest of a retry that ``startSending(_:to:cancellation:answered:)`` could not finish on the event loop: the
    /// backoff and the further attempts, which need a task.
    private func continueRetry(_ send: Send, delay: Duration, otherwise: APNSDelivery) async -> APNSDelivery {
        if let end = await stopped(pausing: delay, otherwise) { return end }
        return await deliver(send)
    }

    /// Returns the stream slot; retires the connection when APNs' answer says it must not be used again.
    private func finish(_ lease: ConnectionPool.Lease, of pool: ConnectionPool, started: ContinuousClock.Instant, _ result: Result<APNSResponse, APNSClientError>) {
        let now = ContinuousClock.now
        metrics.answered(after: started.duration(to: now), at: now)
        if case .success(let response) = result, response.status != 200, let reason = Self.reason(in: response),
            reason.retry == .onAnotherConnection || reason == .unrelatedKeyIDInToken
        {
            pool.retire(lease.connection)
        }
        pool.release(lease)
    }

    /// The retry policy applied to one attempt's result.
    func judge(_ result: Result<APNSResponse, APNSClientError>, _ send: inout Send) -> Verdict {
        let judgement = judgeAttempt(result, &send.progress, expiration: send.notification.expiration)
        if case .retry(let delay, _) = judgement {
            send.progress.trace(result, retryAfter: delay) { wallClock.now() }
        } else {
            send.progress.trace(result, retryAfter: nil) { wallClock.now() }
        }
        let outcome: APNSOutcome
        switch (judgement, result) {
        case (.gaveUp(let stop), _):
            outcome = .failed(gaveUp(stop, last: result, send))
        case (_, .success(let response)) where response.status == 200:
            outcome = .accepted(apnsID: response.apnsID ?? send.apnsID, uniqueID: response.uniqueID)
        case (_, .success(let response)):
            outcome = .rejected(Self.rejection(from: response, apnsID: send.apnsID))
        case (_, .failure(let error)):
            outcome = .failed(error)
        }
        let delivery = APNSDelivery(
            token: send.token, apnsID: send.apnsID, outcome: outcome, attempts: send.attempts,
            unprocessedAttempts: send.progress.unprocessed, trail: send.progress.trail)
        switch judgement {
        case .final, .gaveUp:
            return .final(delivery)
        case .retry(let delay, let refreshed):
            if let refreshed { send.template = sharedParts(send.notification, providerToken: refreshed).template }
            return .retry(after: delay, otherwise: delivery)
        }
    }

    /// The failure of a notification whose retry policy stopped: what each attempt met, counted by kind, the last
    /// one's words and what to do. One attempt's message alone would read as if nothing had been tried again.
    private func gaveUp(
        _ stop: RetryStop, last result: Result<APNSResponse, APNSClientError>, _ send: Send
    ) -> APNSClientError {
        let summary = gaveUpSummary(stop, send.progress)
        switch result {
        case .success(let response):
            let rejection = Self.rejection(from: response, apnsID: send.apnsID)
            let advice = Self.advice(after: stop, last: .answered(status: rejection.status, reason: rejection.reason))
            return APNSClientError(
                .retryLater, "\(summary); the last: APNs answered \(rejection.status) \(rejection.reason). \(advice)",
                rejection: rejection)
        case .failure(let error):
            let advice = Self.advice(after: stop, last: .failed(error.code))
            return APNSClientError(error.code, "\(summary); the last: \(error.message) \(advice)")
        }
    }

    private static func withoutFinalPeriod(_ text: String) -> Substring {
        text.hasSuffix(".") ? text.dropLast() : text[...]
    }

    /// Waits for a retry: `nil` when it may go out, else how the notification ends (``RetryPause``).
    private func stopped(pausing delay: Duration, _ otherwise: APNSDelivery) async -> APNSDelivery? {
        switch await pause(delay) {
        case .elapsed: nil
        case .cancelled: cancelled(otherwise)
        case .shuttingDown: shutDown(otherwise)
        }
    }

    /// How a notification ends when its task is cancelled before a retry: `cancelled`, saying what the last attempt
    /// met. Not a failure: the notification may be sent again with the same `apns-id`.
    private func cancelled(_ delivery: APNSDelivery) -> APNSDelivery {
        APNSDelivery(
            token: delivery.token, apnsID: delivery.apnsID,
            outcome: .failed(APNSClientError(
                .cancelled,
                "The send was cancelled while it waited to be sent again; APNs may or may not have received an earlier attempt. The last attempt: \(delivery.outcome)."
            )),
            attempts: delivery.attempts, unprocessedAttempts: delivery.unprocessedAttempts, trail: delivery.trail)
    }

    /// How a notification ends when a graceful shutdown begins before its retry, in an
    /// ``APNSRetryScope/endingAtGracefulShutdown(_:isolation:)`` scope: `failed`, saying what the attempts met.
    private func shutDown(_ delivery: APNSDelivery) -> APNSDelivery {
        APNSDelivery(
            token: delivery.token, apnsID: delivery.apnsID,
            outcome: .failed(APNSClientError(
                .shutdown,
                "Not sent again: the server began to shut down while the notification waited to be retried, after \(delivery.attempts) attempt\(delivery.attempts == 1 ? "" : "s"). The last attempt: \(Self.withoutFinalPeriod("\(delivery.outcome)")). Send it again once a server runs."
            )),
            attempts: delivery.attempts, unprocessedAttempts: delivery.unprocessedAttempts, trail: delivery.trail)
    }

    /// Sleeps a retry's backoff (nothing when it is zero), unless the task is cancelled or, in an
    /// ``APNSRetryScope/endingAtGracefulShutdown(_:isolation:)`` scope, a graceful shutdown begins, before or meanwhile.
    func pause(_ delay: Duration) async -> RetryPause {
        let endsAtShutdown = APNSRetryScope.endsAtGracefulShutdown
        func interrupted() -> RetryPause {
            !Task.isCancelled && endsAtShutdown && Task.isShuttingDownGracefully ? .shuttingDown : .cancelled
        }
        // A retry at once (an attempt APNs did not process) waits for nothing: only cancellation stops it.
        guard delay > .zero else { return Task.isCancelled ? .cancelled : .elapsed }
        if Task.isCancelled || (endsAtShutdown && Task.isShuttingDownGracefully) { return interrupted() }
        do {
            if endsAtShutdown {
                try await cancelWhenGracefulShutdown { [clock] in try await clock.sleep(for: delay) }
            } else {
                try await clock.sleep(for: delay)
            }
            return .elapsed
        } catch {
            return interrupted()
        }
    }

    /// What every request of one notification shares: its body and header template.
    struct SharedParts: Sendable {
        let notification: PreparedNotification
        let providerToken: ProviderToken?
        let body: ByteBuffer
        let template: APNSHeaderTemplate

        /// Whether these parts are those of `other`: the same notification, whatever its `apns-id` (a fan-out gives
        /// each device its own, and the id is not part of the body or the template).
        func fits(_ other: PreparedNotification) -> Bool {
            notification.body == other.body && notification.pushType == other.pushType && notification.topic == other.topic
                && notification.priority == other.priority && notification.expiration == other.expiration
                && notification.collapseID == other.collapseID
        }
    }

    /// The body and header template for a notification, reused while the same notification goes to many devices
    /// (a fan-out through ``send(_:to:)-(PreparedNotification,_)`` from many tasks): connections then find the
    /// template's fields already indexed instead of looking each one up.
    private func sharedParts(_ notification: PreparedNotification, providerToken: ProviderToken?) -> SharedParts {
        if let last = lastSharedParts.withLock({ $0 }), last.providerToken == providerToken, last.fits(notification) {
            return last
        }
        let parts = SharedParts(
            notification: notification, providerToken: providerToken, body: ByteBuffer(bytes: notification.body),
            template: headerTemplate(notification, authorization: providerToken))
        lastSharedParts.withLock { $0 = parts }
        return parts
    }

    /// The header fields a notification's requests share, in wire order. Values that change from notification to
    /// notification (an expiration time, a collapse id) are kept out of the HPACK table.
    private func headerTemplate(_ notification: PreparedNotification, authorization: ProviderToken?) -> APNSHeaderTemplate {
        var fields: [APNSHeaderTemplate.Field] = [.init(":authority", authority)]
        fields.reserveCapacity(8)
        if let authorization { fields.append(.init("authorization", authorization.authorizationHeader)) }
        fields.append(.init("apns-push-type", notification.pushType.rawValue))
        fields.append(.init("apns-topic", notification.topic))
        if let priority = notification.priority { fields.append(.init("apns-priority", String(priority.rawValue))) }
        if let expiration = notification.expiration {
            fields.append(.init("apns-expiration", String(expiration.secondsSince1970), indexable: expiration.secondsSince1970 == 0))
        }
        if let collapseID = notification.collapseID { fields.append(.init("apns-collapse-id", collapseID, indexable: false)) }
        return APNSHeaderTemplate(fields: fields)
    }

    static func reason(in response: APNSResponse) -> APNSReason? {
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
