public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Posts a delivery: one HTTP/1.1 request, over TLS (verified against the system's roots) for `https`, in plain text
/// for `http` (meant for receivers on 127.0.0.1 and tests).
///
/// Connections are kept alive and reused: after an answer the receiver lets stay open, its connection waits in a
/// small pool per scheme, host and port (at most ``maximumIdlePerEndpoint``, each closed once idle for
/// ``idleTimeout``), so a backlog posts batch after batch without a new TCP (and TLS) handshake each. A connection is
/// closed on any error, timeout, cut answer or `Connection: close`. A reused connection that the receiver closed
/// before answering (it timed it out meanwhile) is retried once on a new one: deliveries are at least once anyway.
///
/// Redirects are not followed: a 3xx is a failed delivery that says to register the final URL. The answer's body is
/// read up to ``maximumResponseBytes`` and kept only for the first 200 characters of an error.
public struct WebhookHTTPClient: Sendable {
    /// What a receiver answered.
    public struct Answer: Sendable, Hashable {
        public var status: Int
        /// The start of its body, for the delivery's record.
        public var body: String
    }

    /// Why a post failed without an answer, in words safe to show.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        /// The connection closed before any answer: on a reused connection, worth one try on a new one.
        var closedBeforeAnswer = false
    }

    /// The most of a receiver's answer that is read; a longer one is cut (and the connection closed).
    public static let maximumResponseBytes = 64 * 1024
    /// Idle connections kept per receiver (scheme, host, port).
    public static let maximumIdlePerEndpoint = 4
    /// How long an idle connection is kept for reuse.
    static let idleTimeout = TimeAmount.seconds(30)

    private let group: any EventLoopGroup
    private let tls: NIOSSLContext?
    private let pool = ConnectionPool()

    /// - Parameter verifyingCertificates: `false` only for tests against a self-signed receiver.
    public init(verifyingCertificates: Bool = true) {
        self.group = MultiThreadedEventLoopGroup.singleton
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = verifyingCertificates ? .fullVerification : .none
        tls = try? NIOSSLContext(configuration: configuration)
    }

    /// Connections opened so far (reused ones are not counted again): for tests and metrics.
    public var connectionsOpened: Int { pool.opened }

    /// Posts `body` to `url` with `headers`, and returns the answer, or throws ``Failure`` after `timeout` or when
    /// the connection fails.
    public func post(url: URL, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Answer {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host,
            !host.isEmpty
        else { throw Failure(description: "The URL \(url.absoluteString) is not an http or https URL.") }
        let secure = scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        guard !secure || tls != nil else { throw Failure(description: "TLS could not be set up on this machine.") }
        let key = ConnectionPool.Key(secure: secure, host: host, port: port)
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?" + $0 } ?? ""))
        head.headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
        head.headers.add(name: "Content-Type", value: "application/json")
        head.headers.add(name: "Content-Length", value: String(body.count))
        head.headers.add(name: "User-Agent", value: "Herald-Webhooks/1")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        let timeoutAmount = TimeAmount.nanoseconds(
            timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)

        if let reused = pool.take(key) {
            do {
                return try await exchange(on: reused, key: key, head: head, body: body, timeout: timeout, timeoutAmount)
            } catch let failure as Failure where failure.closedBeforeAnswer {
                // The receiver closed the idle connection as it was reused: once more on a new one.
            }
        }
        let channel = try await connect(key, timeoutAmount)
        pool.countOpened()
        return try await exchange(on: channel, key: key, head: head, body: body, timeout: timeout, timeoutAmount)
    }

    private func connect(_ key: ConnectionPool.Key, _ timeoutAmount: TimeAmount) async throws -> any Channel {
        let tls = self.tls
        let host = key.host
        let bootstrap = ClientBootstrap(group: group.next())
            .connectTimeout(timeoutAmount)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if key.secure, let tls {
                        let handler = try NIOSSLClientHandler(
                            context: tls, serverHostname: host.first?.isNumber == true ? nil : host)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                }
            }
        do {
            return try await bootstrap.connect(host: key.host, port: key.port).get()
        } catch {
            throw Failure(description: "Could not connect to \(key.host):\(key.port): \(error)")
        }
    }

    /// One request and its answer on a connection; the connection goes back to the pool when the answer lets it
    /// stay open, else it is closed.
    private func exchange(
        on channel: any Channel, key: ConnectionPool.Key, head: HTTPRequestHead, body: [UInt8], timeout: Duration,
        _ timeoutAmount: TimeAmount
    ) async throws -> Answer {
        let promise = channel.eventLoop.makePromise(of: AnswerHandler.Result.self)
        let deadline = channel.eventLoop.scheduleTask(in: timeoutAmount) {
            promise.fail(Failure(description: "No answer within \(timeout) (HERALD_WEBHOOK_TIMEOUT)."))
        }
        defer { deadline.cancel() }
        channel.eventLoop.execute {
            do {
                try channel.pipeline.syncOperations.addHandler(
                    AnswerHandler(promise: promise), name: AnswerHandler.name)
            } catch {
                promise.fail(Failure(description: "The connection failed: \(error)", closedBeforeAnswer: true))
                return
            }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { error in
                promise.fail(Failure(description: "Could not send the request: \(error)", closedBeforeAnswer: true))
            }
        }
        let result: AnswerHandler.Result
        do {
            result = try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                promise.fail(CancellationError())
            }
        } catch {
            channel.close(promise: nil)
            throw error
        }
        if result.keepAlive, (try? await channel.pipeline.removeHandler(name: AnswerHandler.name).get()) != nil {
            pool.give(channel, for: key)
        } else {
            channel.close(promise: nil)
        }
        return result.answer
    }
}

/// Idle keep-alive connections per receiver.
private final class ConnectionPool: Sendable {
    struct Key: Hashable, Sendable {
        var secure: Bool
        var host: String
        var port: Int
    }

    private struct State {
        var idle: [Key: [(channel: any Channel, since: NIODeadline)]] = [:]
        var opened = 0
    }

    private let state = Mutex(State())

    var opened: Int { state.withLock { $0.opened } }

    func countOpened() { state.withLock { $0.opened += 1 } }

    /// The most recently used idle connection that is still open and not idle too long; the others are closed.
    func take(_ key: Key) -> (any Channel)? {
        let now = NIODeadline.now()
        var stale: [any Channel] = []
        let found: (any Channel)? = state.withLock { state in
            while let (channel, since) = state.idle[key]?.popLast() {
                if channel.isActive, now - since < WebhookHTTPClient.idleTimeout { return channel }
                stale.append(channel)
            }
            return nil
        }
        for channel in stale { channel.close(promise: nil) }
        return found
    }

    /// Keeps a connection for reuse, or closes it when the receiver has enough idle ones; an idle one is closed once
    /// ``WebhookHTTPClient/idleTimeout`` passes without a reuse.
    func give(_ channel: any Channel, for key: Key) {
        let since = NIODeadline.now()
        let kept = state.withLock { state in
            var idle = state.idle[key] ?? []
            guard idle.count < WebhookHTTPClient.maximumIdlePerEndpoint else { return false }
            idle.append((channel, since))
            state.idle[key] = idle
            return true
        }
        guard kept else {
            channel.close(promise: nil)
            return
        }
        channel.eventLoop.scheduleTask(in: WebhookHTTPClient.idleTimeout) { [weak self] in
            guard let self else {
                channel.close(promise: nil)
                return
            }
            let expired = self.state.withLock { state in
                guard let index = state.idle[key]?.firstIndex(where: { $0.channel === channel && $0.since == since })
                else { return false }
                state.idle[key]?.remove(at: index)
                return true
            }
            if expired { channel.close(promise: nil) }
        }
    }
}

/// Collects the answer's status and the start of its body; completes on its end or when the connection closes.
private final class AnswerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    static let name = "herald.webhook.answer"

    /// An answer, and whether its connection may carry the next request.
    struct Result: Sendable {
        var answer: WebhookHTTPClient.Answer
        var keepAlive: Bool
    }

    private let promise: EventLoopPromise<Result>
    private var status: Int?
    private var keepAlive = false
    private var body: [UInt8] = []

    init(promise: EventLoopPromise<Result>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            keepAlive = head.isKeepAlive
        case .body(let buffer):
            let room = WebhookHTTPClient.maximumResponseBytes - body.count
            if room > 0 { body.append(contentsOf: buffer.readableBytesView.prefix(room)) }
            if buffer.readableBytes > room {
                keepAlive = false
                finish()
            }
        case .end:
            finish()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if status != nil {
            keepAlive = false
            finish()
        } else {
            promise.fail(
                WebhookHTTPClient.Failure(
                    description: "The connection closed before an answer.", closedBeforeAnswer: true))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(WebhookHTTPClient.Failure(description: "The connection failed: \(error)"))
        context.close(promise: nil)
    }

    private func finish() {
        guard let status else { return }
        promise.succeed(
            Result(
                answer: .init(status: status, body: String(decoding: body.prefix(200), as: UTF8.self)),
                keepAlive: keepAlive))
    }
}
