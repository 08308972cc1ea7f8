import DequeModule
import HeraldCore
import HeraldHTTP2
import NIOCore
import NIOHPACK
import NIOTLS

/// The client side of one HTTP/2 connection (RFC 9113) to APNs, directly over TLS.
///
/// The protocol itself (stream states, SETTINGS, both directions' windows, acknowledgements, the limits a server is
/// held to) is ``HTTP2ConnectionState``, shared with the emulator. This handler adds what a sender needs: requests
/// written in batches straight into one buffer (``write(_:)``), request bodies that wait for window, responses matched
/// to pending streams by id, deadlines, keep-alive PINGs, GOAWAY and `MAX_CONCURRENT_STREAMS` reported to the pool.
/// Anything the server does outside the protocol closes the connection with a GOAWAY and an error that says what.
final class APNSConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// What the pool learns from the connection.
    struct Events: Sendable {
        /// The server's `MAX_CONCURRENT_STREAMS` (first SETTINGS frame, and every change).
        var streamLimitChanged: @Sendable (Int) -> Void
        /// A GOAWAY arrived (or the stream ids ran out): no new streams; the connection closes when the remaining
        /// ones finish.
        var goingAway: @Sendable (_ reason: String?) -> Void
        /// Every stream finished (to track idleness).
        var streamsIdle: @Sendable () -> Void
        /// The connection closed: the pool must stop handing it out at once, not when its close future fires.
        var closed: @Sendable () -> Void
    }

    private struct Stream {
        let onResponse: @Sendable (Result<APNSResponse, APNSClientError>) -> Void
        let deadline: NIODeadline
        let cancellation: APNSCancellation?
        var response = APNSResponse()
        /// Body bytes waiting for flow-control window.
        var unsentBody: ByteBuffer?
    }

    /// The MAX_CONCURRENT_STREAMS assumed when the server's first SETTINGS does not say (RFC 9113 §6.5.2 recommends
    /// at least 100).
    static let defaultStreamLimit = 100
    /// The highest client stream id (RFC 9113 §5.1.1).
    static let maximumStreamID: UInt32 = 0x7FFF_FFFF

    private let events: Events
    private let requestTimeout: TimeAmount
    private let pingInterval: TimeAmount
    private var context: ChannelHandlerContext?
    private var reader = HTTP2FrameReader()
    /// Stream states, SETTINGS, windows and the limits a server is held to: shared with the emulator's handler.
    private var state: HTTP2ConnectionState
    private var encoder = HPACKRequestEncoder()
    private var streams: [UInt32: Stream] = [:]
    /// Stream ids in the order they were opened: deadlines grow in that order, so the sweep looks at the front only.
    private var order = Deque<UInt32>()
    /// Streams whose body waits for window, oldest first.
    private var blocked = Deque<UInt32>()
    /// Set once no new streams may start: a GOAWAY arrived or the stream ids ran out.
    private var goingAway = false
    /// Frames written while reading or writing requests, flushed together.
    private var out = ByteBuffer()
    private var lastActivity = NIODeadline.now()
    private var sweep: RepeatedTask?
    /// Why the connection is closing, for the streams it fails.
    private var closeReason: APNSClientError?

    init(events: Events, requestTimeout: TimeAmount, pingInterval: TimeAmount, firstStreamID: UInt32 = 1,
         limits: HTTP2Limits = HTTP2Limits()) {
        self.events = events
        self.requestTimeout = requestTimeout
        self.pingInterval = pingInterval
        self.state = HTTP2ConnectionState(role: .client, limits: limits, firstLocalStreamID: firstStreamID)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        lastActivity = context.eventLoop.now
        out = context.channel.allocator.buffer(capacity: 1024)
        let interval = TimeAmount.milliseconds(min(250, max(10, requestTimeout.nanoseconds / 4_000_000)))
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            loopBound.value.sweepDeadlines()
        }
        if context.channel.isActive { writePreface(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        sweep = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        writePreface(context: context)
        context.fireChannelActive()
    }

    private func writePreface(context: ChannelHandlerContext) {
        state.start(settings: [
            (.enablePush, 0),
            (.maxConcurrentStreams, 100),
            (.initialWindowSize, HTTP2Protocol.defaultWindowSize),
        ], into: &out)
        flush()
    }

    // MARK: Requests

    /// Opens a stream for each request and writes them all with one flush. Requests the connection can no longer
    /// take fail at once with `notProcessed`: they were never written, so sending them again elsewhere is safe.
    func write(_ requests: [APNSStreamRequest]) {
        guard let context, context.channel.isActive, !goingAway, closeReason == nil else {
            let error = closeReason.map { APNSClientError(.notProcessed, "The connection is closing (\($0.message)); the notification was not sent on it.") }
                ?? APNSClientError(.notProcessed, "The connection is closing; the notification was not sent on it.")
            for request in requests {
                request.onResponse(.failure(request.cancellation?.isCancelled == true ? APNSCancellation.beforeSending : error))
            }
            return
        }
        if !blocked.isEmpty { resumeBlockedBodies() }
        // The event loop's clock, not the wall's: an EmbeddedEventLoop's advanceTime then drives timeouts in tests.
        let deadline = context.eventLoop.now + requestTimeout
        for request in requests {
            if request.cancellation?.isCancelled == true {
                request.onResponse(.failure(APNSCancellation.beforeSending))
                continue
            }
            let endStream = request.body.readableBytes == 0
            guard let streamID = state.openLocalStream(endStream: endStream) else {
                request.onResponse(.failure(APNSClientError(.notProcessed, "The connection ran out of stream ids; the notification was not sent on it.")))
                continue
            }
            writeHeaders(streamID: streamID, request: request, endStream: endStream)
            var stream = Stream(onResponse: request.onResponse, deadline: deadline, cancellation: request.cancellation)
            if !endStream {
                var body = request.body
                writeData(streamID: streamID, body: &body)
                if body.readableBytes > 0 {
                    stream.unsentBody = body
                    blocked.append(streamID)
                }
            }
            streams[streamID] = stream
            order.append(streamID)
        }
        lastActivity = deadline - requestTimeout
        flush()
        if state.nextLocalStreamID > Self.maximumStreamID, !goingAway {
            // Stream ids cannot be reused: the pool must open another connection (RFC 9113 §5.1.1).
            goingAway = true
            events.goingAway("stream ids exhausted")
        }
    }

    private func writeHeaders(streamID: UInt32, request: APNSStreamRequest, endStream: Bool) {
        let start = out.writerIndex
        out.writeHTTP2Headers(streamID: streamID, endStream: endStream) { block in
            switch request.target {
            case .device(let token):
                encoder.encode(template: request.template, tokenHex: token.hex, apnsID: request.requestID, into: &block)
            case .resource(let method, let path):
                encoder.encode(template: request.template, method: method, path: path, requestID: request.requestID, into: &block)
            }
        }
        let length = out.writerIndex - start - HTTP2Protocol.frameHeaderLength
        let maxFrameSize = state.peerMaxFrameSize
        guard length > maxFrameSize else { return }
        // Larger than the server's frame size: split into HEADERS and CONTINUATION frames (RFC 9113 §6.10).
        var block = out.getSlice(at: start + HTTP2Protocol.frameHeaderLength, length: length)!
        out.moveWriterIndex(to: start)
        var first = true
        while block.readableBytes > 0 {
            let chunk = block.readSlice(length: min(maxFrameSize, block.readableBytes))!
            let last = block.readableBytes == 0
            let flags = (last ? HTTP2Flags.endHeaders : 0) | (first && endStream ? HTTP2Flags.endStream : 0)
            out.writeHTTP2FrameHeader(length: chunk.readableBytes, type: first ? .headers : .continuation, flags: flags, streamID: streamID)
            out.writeImmutableBuffer(chunk)
            first = false
        }
    }

    /// Writes as much of `body` as the windows allow; what is left stays in `body`.
    private func writeData(streamID: UInt32, body: inout ByteBuffer) {
        while body.readableBytes > 0 {
            let length = state.reserveSendWindow(streamID: streamID, wanted: body.readableBytes)
            guard length > 0 else { return }
            let chunk = body.readSlice(length: length)!
            let last = body.readableBytes == 0
            out.writeHTTP2Data(streamID: streamID, buffer: chunk, endStream: last)
            if last { state.sentEndStream(streamID: streamID) }
        }
    }

    /// Sends waiting bodies, oldest first, as far as the windows now allow.
    private func resumeBlockedBodies() {
        var stillBlocked = Deque<UInt32>()
        while let streamID = blocked.popFirst() {
            guard var stream = streams[streamID], var body = stream.unsentBody else { continue }
            if state.connectionSendWindow > 0 { writeData(streamID: streamID, body: &body) }
            stream.unsentBody = body.readableBytes > 0 ? body : nil
            streams[streamID] = stream
            if body.readableBytes > 0 { stillBlocked.append(streamID) }
        }
        blocked = stillBlocked
    }

    private func flush() {
        guard let context, out.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        out = context.channel.allocator.buffer(capacity: 256)
    }

    // MARK: Frames in

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reader.append(unwrapInboundIn(data))
        lastActivity = .now()
        do {
            while closeReason == nil, let frame = try reader.nextFrame() {
                try receive(state.receive(frame, into: &out))
            }
        } catch let error as HTTP2ConnectionError {
            connectionError(error)
        } catch let error as HTTP2FrameReader.FrameTooLarge {
            connectionError(HTTP2ConnectionError(.frameSizeError, "a \(error.length)-byte frame, above the 16,384 bytes allowed"))
        } catch {
            connectionError(HTTP2ConnectionError(.internalError, "\(error)"))
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        state.outputWritable = context.channel.isWritable
        context.fireChannelWritabilityChanged()
    }

    private func receive(_ event: HTTP2Event) throws {
        switch event {
        case .none, .settingsAcknowledged, .pingAcknowledged, .streamLimitExceeded:
            break
        case .headers(let streamID, let headers, let endStream):
            try receivedHeaders(streamID: streamID, headers: headers, endStream: endStream)
        case .headerListTooLarge(let streamID, let size, let limit):
            fail(streamID, APNSClientError(.connectionClosed, "APNs answered with \(size) bytes of headers, above the \(limit) allowed."))
        case .data(let streamID, let payload, let endStream):
            guard var stream = streams[streamID] else { return }
            if stream.response.body == nil { stream.response.body = payload } else { stream.response.body!.writeImmutableBuffer(payload) }
            if endStream { complete(streamID, stream) } else { streams[streamID] = stream }
        case .streamReset(let streamID, let code):
            // REFUSED_STREAM means the server did not process it: safe to send again.
            let error = code == HTTP2ErrorCode.refusedStream.rawValue
                ? APNSClientError(.notProcessed, "APNs refused the stream (REFUSED_STREAM); it was not processed.")
                : APNSClientError(.connectionClosed, "APNs reset the stream (\(HTTP2ErrorCode.name(of: code))) before answering.")
            fail(streamID, error)
        case .streamError(let streamID, let code):
            fail(streamID, APNSClientError(.connectionClosed, "APNs broke the protocol on the stream (\(code.name)); it was reset."))
        case .settings(let streamLimit, let first, _):
            encoder.peerMaximumSizeChanged(to: state.headerTableSize)
            if first {
                events.streamLimitChanged(streamLimit ?? Self.defaultStreamLimit)
            } else if let streamLimit {
                events.streamLimitChanged(streamLimit)
            }
            if !blocked.isEmpty { resumeBlockedBodies() }
        case .windowOpened:
            if !blocked.isEmpty { resumeBlockedBodies() }
        case .goAway(let lastStreamID, let code, let debugData):
            receivedGoAway(lastStreamID: lastStreamID, code: code, debugData: debugData)
        }
    }

    private func receivedHeaders(streamID: UInt32, headers: HPACKHeaders, endStream: Bool) throws {
        guard var stream = streams[streamID] else { return }
        if stream.response.status == 0 {
            var status = 0
            for (name, value, _) in headers {
                switch name {
                case ":status": status = Int(value) ?? 0
                case "apns-id": stream.response.apnsID = value
                case "apns-unique-id": stream.response.uniqueID = value
                case "apns-request-id": stream.response.requestID = value
                case "apns-channel-id": stream.response.channelID = value
                default: break
                }
            }
            guard (200...599).contains(status) else {
                // 1xx is informational (APNs sends none); anything else is no HTTP status.
                if (100...199).contains(status) { return }
                throw HTTP2ConnectionError(.protocolError, "a response without a valid :status")
            }
            stream.response.status = status
        }
        if endStream { complete(streamID, stream) } else { streams[streamID] = stream }
    }

    private func receivedGoAway(lastStreamID: UInt32, code: UInt32, debugData: ByteBuffer) {
        let reason = Self.reason(in: debugData) ?? (code == 0 ? nil : HTTP2ErrorCode.name(of: code))
        let first = !goingAway
        goingAway = true
        if first { events.goingAway(reason) }
        // Streams above last-stream-id were never processed (RFC 9113 §6.8): safe to send again elsewhere.
        let unprocessed = APNSClientError(.notProcessed, "APNs sent GOAWAY (\(reason ?? "no reason")) before processing the stream.")
        for streamID in streams.keys where streamID > lastStreamID {
            state.forgetStream(streamID)
            fail(streamID, unprocessed)
        }
        if streams.isEmpty { context?.close(promise: nil) }
    }

    // MARK: Connection events

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            closeReason = APNSClientError(.connectFailed, "The server did not agree to HTTP/2 (ALPN h2); APNs speaks only HTTP/2.")
            context.fireErrorCaught(closeReason!)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        events.closed()
        let error = closeReason.map { APNSClientError(.connectionClosed, $0.message) }
            ?? APNSClientError(.connectionClosed, "The connection to APNs closed before it answered.")
        for streamID in Array(streams.keys) { fail(streamID, error) }
        blocked.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS and socket errors end the connection; channelInactive fails what is pending with the reason.
        if closeReason == nil {
            closeReason = APNSClientError(.connectionClosed, "The connection to APNs failed: \(error).")
        }
        context.close(promise: nil)
    }

    /// The server broke the protocol: say so in a GOAWAY, close, and fail every stream with the reason.
    private func connectionError(_ error: HTTP2ConnectionError) {
        guard closeReason == nil, let context else { return }
        closeReason = APNSClientError(.connectionClosed, "APNs broke the HTTP/2 protocol (\(error.code.name): \(error.message)); the connection was closed.")
        state.goAway(lastStreamID: 0, code: error.code, debugData: Array(error.message.utf8), into: &out)
        flush()
        context.close(promise: nil)
    }

    // MARK: Bookkeeping

    private func complete(_ streamID: UInt32, _ stream: Stream) {
        streams[streamID] = nil
        if stream.unsentBody != nil {
            // APNs answered before the whole body went out: stop sending it (RFC 9113 §8.1).
            try? state.resetStream(streamID, code: .cancel, into: &out)
        } else {
            state.forgetStream(streamID)
        }
        stream.onResponse(.success(stream.response))
        settled()
    }

    private func fail(_ streamID: UInt32, _ error: APNSClientError) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        state.forgetStream(streamID)
        stream.onResponse(.failure(error))
        settled()
    }

    /// Answers the open streams of requests carrying `cancellation` `cancelled` and resets them (RST_STREAM CANCEL),
    /// so APNs stops working on them; an answer that arrives later for one is ignored like any answer for a stream
    /// this side gave up on. Streams already answered are gone from ``streams``: their answer stands.
    func cancel(_ cancellation: APNSCancellation) {
        let cancelled = streams.filter { $0.value.cancellation === cancellation }.keys.sorted()
        guard !cancelled.isEmpty else { return }
        for streamID in cancelled {
            let stream = streams.removeValue(forKey: streamID)!
            try? state.resetStream(streamID, code: .cancel, into: &out)
            stream.onResponse(.failure(APNSCancellation.whileWaiting))
        }
        flush()
        settled()
    }

    private func settled() {
        guard streams.isEmpty else { return }
        order.removeAll(keepingCapacity: true)
        blocked.removeAll(keepingCapacity: true)
        events.streamsIdle()
        if goingAway { context?.close(promise: nil) }
    }

    private func sweepDeadlines() {
        guard let context else { return }
        let now = context.eventLoop.now
        while let streamID = order.first {
            guard let stream = streams[streamID] else {
                order.removeFirst()
                continue
            }
            guard stream.deadline <= now else { break }
            order.removeFirst()
            try? state.resetStream(streamID, code: .cancel, into: &out)
            fail(streamID, APNSClientError(.timeout, "APNs did not answer within \(requestTimeout.nanoseconds / 1_000_000) ms."))
        }
        if streams.isEmpty, now - lastActivity >= pingInterval, context.channel.isActive {
            lastActivity = now
            state.ping(UInt64(truncatingIfNeeded: now.uptimeNanoseconds), into: &out)
        }
        flush()
    }

    private static func reason(in buffer: ByteBuffer) -> String? {
        guard buffer.readableBytes > 0 else { return nil }
        guard let value = try? JSONValue(parsing: buffer.readableBytesView) else { return String(buffer: buffer) }
        return value["reason"]?.stringValue
    }
}
