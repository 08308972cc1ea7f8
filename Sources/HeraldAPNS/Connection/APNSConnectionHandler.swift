import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOTLS

/// Speaks APNs over one HTTP/2 connection without a stream channel per request: it numbers the streams itself,
/// writes HEADERS and DATA frames through `NIOHTTP2Handler`, and matches response frames to pending promises.
///
/// A child channel per stream would cost an allocation-heavy pipeline for every notification; APNs traffic is
/// one small request and one small response per stream, so a dictionary of pending streams does the same job.
final class APNSConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = APNSStreamRequest
    typealias OutboundOut = HTTP2Frame

    /// What the pool learns from the connection.
    struct Events: Sendable {
        /// The server's `MAX_CONCURRENT_STREAMS` (first SETTINGS frame, and every change).
        var streamLimitChanged: @Sendable (Int) -> Void
        /// A GOAWAY arrived: no new streams; the connection closes when the remaining ones finish.
        var goingAway: @Sendable (_ reason: String?) -> Void
        /// Every stream finished (to track idleness).
        var streamsIdle: @Sendable () -> Void
        /// The connection closed: the pool must stop handing it out at once, not when its close future fires.
        var closed: @Sendable () -> Void
    }

    private struct Pending {
        let promise: EventLoopPromise<APNSResponse>
        let deadline: NIODeadline
        var response = APNSResponse()
    }

    private let events: Events
    private let requestTimeout: TimeAmount
    private let pingInterval: TimeAmount
    private var pending: [HTTP2StreamID: Pending] = [:]
    /// Stream ids in the order they were opened: deadlines grow in that order, so the sweep looks at the front only.
    private var order: [HTTP2StreamID] = []
    private var orderHead = 0
    private var nextStreamID = HTTP2StreamID(1)
    private var goAwayLastStreamID: HTTP2StreamID?
    private var flushScheduled = false
    private var unacknowledgedBytes = 0
    private var lastActivity = NIODeadline.now()
    private var sweep: RepeatedTask?
    private var context: ChannelHandlerContext?

    init(events: Events, requestTimeout: TimeAmount, pingInterval: TimeAmount) {
        self.events = events
        self.requestTimeout = requestTimeout
        self.pingInterval = pingInterval
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let interval = TimeAmount.milliseconds(min(250, max(10, requestTimeout.nanoseconds / 4_000_000)))
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            loopBound.value.sweepDeadlines()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        sweep = nil
        self.context = nil
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        // The handler owns the request from here: it completes the request's promise, so the write itself succeeds.
        promise?.succeed()
        guard goAwayLastStreamID == nil, context.channel.isActive else {
            request.promise.fail(APNSClientError(.notProcessed, "The connection is closing; the notification was not sent on it."))
            return
        }
        let streamID = nextStreamID
        nextStreamID = HTTP2StreamID(Int(streamID) + 2)
        pending[streamID] = Pending(promise: request.promise, deadline: .now() + requestTimeout)
        order.append(streamID)
        lastActivity = .now()
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers, endStream: false)))), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))), promise: nil)
        // The connection flushes once per batch of requests (APNSConnection.drain).
    }

    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.assumeIsolated().execute {
            let handler = loopBound.value
            handler.flushScheduled = false
            handler.context?.flush()
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastActivity = .now()
        switch frame.payload {
        case .headers(let headers):
            guard var entry = pending[frame.streamID] else { return }
            for header in headers.headers {
                switch header.name {
                case ":status": entry.response.status = Int(header.value) ?? 0
                case "apns-id": entry.response.apnsID = header.value
                case "apns-unique-id": entry.response.uniqueID = header.value
                default: break
                }
            }
            if headers.endStream { complete(frame.streamID, entry.response) } else { pending[frame.streamID] = entry }
        case .data(let data):
            if case .byteBuffer(let buffer) = data.data {
                acknowledge(bytes: buffer.readableBytes, context: context)
                if var entry = pending[frame.streamID] {
                    if entry.response.body == nil { entry.response.body = buffer } else { entry.response.body!.writeImmutableBuffer(buffer) }
                    if data.endStream { complete(frame.streamID, entry.response) } else { pending[frame.streamID] = entry }
                }
            }
        case .rstStream(let code):
            // REFUSED_STREAM means the server did not process it: safe to send again.
            let error = code == .refusedStream
                ? APNSClientError(.notProcessed, "APNs refused the stream (REFUSED_STREAM); it was not processed.")
                : APNSClientError(.connectionClosed, "APNs reset the stream (\(code)) before answering.")
            fail(frame.streamID, error)
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                events.streamLimitChanged(setting.value)
            }
        case .goAway(let lastStreamID, _, let debugData):
            receivedGoAway(lastStreamID: lastStreamID, reason: debugData.flatMap(Self.reason(in:)), context: context)
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent, pending[closed.streamID] != nil {
            let refused = closed.reason == .refusedStream
            fail(closed.streamID, APNSClientError(refused ? .notProcessed : .connectionClosed, "The stream closed before APNs answered (\(closed.reason.map { "\($0)" } ?? "no error code"))."))
        }
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            context.fireErrorCaught(APNSClientError(.connectFailed, "The server did not agree to HTTP/2 (ALPN h2); APNs speaks only HTTP/2."))
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        events.closed()
        let error = APNSClientError(.connectionClosed, "The connection to APNs closed before it answered.")
        for (streamID, _) in pending { fail(streamID, error) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Stream-level errors affect one stream, which its own frames or close event settle; anything else ends
        // the connection, and channelInactive fails what is pending.
        if error is NIOHTTP2Errors.StreamError { return }
        context.close(promise: nil)
    }

    // MARK: Bookkeeping

    private func complete(_ streamID: HTTP2StreamID, _ response: APNSResponse) {
        guard let entry = pending.removeValue(forKey: streamID) else { return }
        entry.promise.succeed(response)
        settled()
    }

    private func fail(_ streamID: HTTP2StreamID, _ error: APNSClientError) {
        guard let entry = pending.removeValue(forKey: streamID) else { return }
        entry.promise.fail(error)
        settled()
    }

    private func settled() {
        if pending.isEmpty {
            order.removeAll(keepingCapacity: true)
            orderHead = 0
            events.streamsIdle()
            if goAwayLastStreamID != nil { context?.close(promise: nil) }
        }
    }

    private func receivedGoAway(lastStreamID: HTTP2StreamID, reason: String?, context: ChannelHandlerContext) {
        goAwayLastStreamID = lastStreamID
        events.goingAway(reason)
        let unprocessed = APNSClientError(.notProcessed, "APNs sent GOAWAY (\(reason ?? "no reason")) before processing the stream.")
        for streamID in pending.keys where streamID > lastStreamID { fail(streamID, unprocessed) }
        if pending.isEmpty { context.close(promise: nil) }
    }

    /// Gives the server back the connection window that response bodies used, since no stream multiplexer does.
    private func acknowledge(bytes: Int, context: ChannelHandlerContext) {
        unacknowledgedBytes += bytes
        if unacknowledgedBytes >= 16_384 {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))), promise: nil)
            unacknowledgedBytes = 0
            scheduleFlush(context: context)
        }
    }

    private func sweepDeadlines() {
        guard let context else { return }
        let now = NIODeadline.now()
        while orderHead < order.count {
            let streamID = order[orderHead]
            guard let entry = pending[streamID] else {
                orderHead += 1
                continue
            }
            guard entry.deadline <= now else { break }
            orderHead += 1
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
            scheduleFlush(context: context)
            fail(streamID, APNSClientError(.timeout, "APNs did not answer within \(requestTimeout.nanoseconds / 1_000_000) ms."))
        }
        if orderHead > 4096, orderHead * 2 > order.count {
            order.removeFirst(orderHead)
            orderHead = 0
        }
        if pending.isEmpty, now - lastActivity >= pingInterval, context.channel.isActive {
            lastActivity = now
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: UInt64(now.uptimeNanoseconds)), ack: false))), promise: nil)
        }
    }

    private static func reason(in buffer: ByteBuffer) -> String? {
        guard buffer.readableBytes > 0, let value = try? JSONValue(parsing: buffer.readableBytesView) else {
            return buffer.readableBytes > 0 ? String(buffer: buffer) : nil
        }
        return value["reason"]?.stringValue
    }
}
