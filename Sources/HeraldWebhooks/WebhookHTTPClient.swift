public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Posts a delivery: one HTTP/1.1 request on a connection of its own, over TLS (verified against the system's
/// roots) for `https`, in plain text for `http` (meant for receivers on 127.0.0.1 and tests).
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
    }

    /// The most of a receiver's answer that is read; a longer one is cut (and the connection closed).
    public static let maximumResponseBytes = 64 * 1024

    private let group: any EventLoopGroup
    private let tls: NIOSSLContext?

    /// - Parameter verifyingCertificates: `false` only for tests against a self-signed receiver.
    public init(verifyingCertificates: Bool = true) {
        self.group = MultiThreadedEventLoopGroup.singleton
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = verifyingCertificates ? .fullVerification : .none
        tls = try? NIOSSLContext(configuration: configuration)
    }

    /// Posts `body` to `url` with `headers`, and returns the answer, or throws ``Failure`` after `timeout` or when
    /// the connection fails.
    public func post(url: URL, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Answer {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host,
            !host.isEmpty
        else { throw Failure(description: "The URL \(url.absoluteString) is not an http or https URL.") }
        let secure = scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        let path = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?" + $0 } ?? "")
        guard !secure || tls != nil else { throw Failure(description: "TLS could not be set up on this machine.") }
        let tls = self.tls
        let loop = group.next()
        let promise = loop.makePromise(of: Answer.self)
        let timeoutAmount = TimeAmount.nanoseconds(
            timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeoutAmount)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if secure, let tls {
                        let handler = try NIOSSLClientHandler(
                            context: tls, serverHostname: host.first?.isNumber == true ? nil : host)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(AnswerHandler(promise: promise))
                }
            }
        let deadline = loop.scheduleTask(in: timeoutAmount) {
            promise.fail(Failure(description: "No answer within \(timeout) (HERALD_WEBHOOK_TIMEOUT)."))
        }
        let connecting = bootstrap.connect(host: host, port: port)
        connecting.whenComplete { result in
            switch result {
            case .failure(let error):
                promise.fail(Failure(description: "Could not connect to \(host):\(port): \(error)"))
            case .success(let channel):
                var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
                head.headers.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
                head.headers.add(name: "Content-Type", value: "application/json")
                head.headers.add(name: "Content-Length", value: String(body.count))
                head.headers.add(name: "User-Agent", value: "Herald-Webhooks/1")
                head.headers.add(name: "Connection", value: "close")
                for (name, value) in headers { head.headers.add(name: name, value: value) }
                channel.write(HTTPClientRequestPart.head(head), promise: nil)
                channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
                channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { error in
                    promise.fail(Failure(description: "Could not send the request: \(error)"))
                }
                promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
            }
        }
        defer { deadline.cancel() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
        }
    }
}

/// Collects the answer's status and the start of its body; completes on its end or when the connection closes.
private final class AnswerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<WebhookHTTPClient.Answer>
    private var status: Int?
    private var body: [UInt8] = []

    init(promise: EventLoopPromise<WebhookHTTPClient.Answer>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
        case .body(let buffer):
            let room = WebhookHTTPClient.maximumResponseBytes - body.count
            if room > 0 { body.append(contentsOf: buffer.readableBytesView.prefix(room)) }
            if buffer.readableBytes > room { finish(context: context) }
        case .end:
            finish(context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if status != nil {
            finish(context: context)
        } else {
            promise.fail(WebhookHTTPClient.Failure(description: "The connection closed before an answer."))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(WebhookHTTPClient.Failure(description: "The connection failed: \(error)"))
        context.close(promise: nil)
    }

    private func finish(context: ChannelHandlerContext) {
        guard let status else { return }
        promise.succeed(.init(status: status, body: String(decoding: body.prefix(200), as: UTF8.self)))
        context.close(promise: nil)
    }
}
