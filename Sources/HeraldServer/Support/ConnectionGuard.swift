import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import HeraldSending

/// Bounds what one HTTP/1.1 connection can cost: a request must arrive whole within a deadline, a connection
/// still busy when the server shuts down is closed after a grace period, and malformed HTTP gets the API's JSON
/// error instead of an empty `400`.
///
/// Sits after Hummingbird's HTTP/1 codec, so it sees request and response parts. Hummingbird's own idle timeout
/// closes connections that send no request head in time (idle keep-alive, or headers sent too slowly); this
/// handler covers the body, which a slow client could otherwise dribble forever, one byte per idle period.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let requestTimeout: TimeAmount
    private let shutdownGracePeriod: TimeAmount
    private let logger: Logger
    /// A request head arrived and its end has not.
    private var readingRequest = false
    /// A response head was written for the current request.
    private var responseStarted = false
    private var requestDeadline: Scheduled<Void>?
    private var shutdownDeadline: Scheduled<Void>?

    init(requestTimeout: TimeAmount, shutdownGracePeriod: TimeAmount, logger: Logger) {
        self.requestTimeout = requestTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            readingRequest = true
            responseStarted = false
            requestDeadline?.cancel()
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            requestDeadline = context.eventLoop.scheduleTask(in: requestTimeout) {
                let (handler, context) = loopBound.value
                handler.requestTimedOut(context: context)
            }
        case .body:
            break
        case .end:
            readingRequest = false
            requestDeadline?.cancel()
            requestDeadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data) { responseStarted = true }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, shutdownDeadline == nil {
            // Hummingbird closes an idle connection at once and a busy one after its response; a client that never
            // finishes its request would hold the shutdown forever, so it gets a grace period.
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            shutdownDeadline = context.eventLoop.scheduleTask(in: shutdownGracePeriod) { [logger] in
                logger.debug("Closed a connection still busy when the shutdown grace period ended")
                loopBound.value.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        if readingRequest || responseStarted {
            // Mid-body: the route reading the body must see the error (else it would take a cut body as whole); the
            // error middleware answers it.
            context.fireErrorCaught(error)
            return
        }
        logger.debug("Malformed HTTP request", metadata: [LogKey.error: "\(parserError)"])
        answerAndClose(context: context, APIError.malformedHTTP(parserError))
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelDeadlines()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadlines()
    }

    private func requestTimedOut(context: ChannelHandlerContext) {
        requestDeadline = nil
        guard readingRequest else { return }
        logger.debug("Closed a connection whose request did not arrive in time")
        if responseStarted {
            context.close(promise: nil)
        } else {
            answerAndClose(
                context: context,
                APIError(
                    .requestTimeout, reason: "requestTimeout",
                    "The request did not arrive whole within \(Self.describe(requestTimeout)): send it faster, or check the network."
                ))
        }
    }

    /// Writes an error answer with `Connection: close`, then closes.
    private func answerAndClose(context: ChannelHandlerContext, _ error: APIError) {
        guard context.channel.isActive else { return }
        responseStarted = true
        var headers = error.responseHeaders
        headers[.connection] = "close"
        let body = error.jsonBody
        headers[.contentLength] = String(body.count)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: error.status, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    /// `30 s`, or `300 ms` below a second.
    static func describe(_ amount: TimeAmount) -> String {
        amount.nanoseconds % 1_000_000_000 == 0
            ? "\(amount.nanoseconds / 1_000_000_000) s" : "\(amount.nanoseconds / 1_000_000) ms"
    }

    private func cancelDeadlines() {
        requestDeadline?.cancel()
        requestDeadline = nil
        shutdownDeadline?.cancel()
        shutdownDeadline = nil
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}

extension APIError {
    /// `400 malformedHTTP`, or `431 headersTooLarge` for headers over the limit: HTTP no route ever saw.
    static func malformedHTTP(_ error: HTTPParserError) -> APIError {
        if error == .headerOverflow {
            return APIError(
                .requestHeaderFieldsTooLarge, reason: "headersTooLarge",
                "The request headers are too large: send less than 16 KiB of headers.")
        }
        return APIError(
            .badRequest, reason: "malformedHTTP",
            "The request is not valid HTTP/1.1 (\(error)): check its headers and framing (one Content-Length, or Transfer-Encoding alone)."
        )
    }
}
