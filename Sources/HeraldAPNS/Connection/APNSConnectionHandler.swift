import DequeModule
import HeraldCore
import HeraldHTTP2
import NIOCore
import NIOHPACK
import NIOTLS

/// The client side of one HTTP/2 connection (RFC 9113) to APNs, directly over TLS.
///
/// APNs traffic is one small request and one small response per stream, so this handler does only what that needs:
/// the preface and SETTINGS, HEADERS (+ CONTINUATION) and DATA for requests, connection and stream flow control for
/// request bodies (bodies wait when the server's window is short), WINDOW_UPDATE for response bodies, SETTINGS and
/// PING acknowledgements, RST_STREAM, GOAWAY, and `MAX_CONCURRENT_STREAMS` changes reported to the pool. Requests are
/// written in batches straight into one buffer (``write(_:)``), responses matched to pending streams by id.
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
        var response = APNSResponse()
        var sendWindow: Int
        var receiveWindow = HTTP2Protocol.defaultWindowSize
        /// Body bytes waiting for flow-control window.
        var unsentBody: ByteBuffer?
    }

    /// A protocol violation by the server: the connection ends with a GOAWAY carrying `code`.
    private struct ConnectionError: Error {
        let code: HTTP2ErrorCode
        let message: String
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
    private var encoder = HPACKRequestEncoder()
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
    private var streams: [UInt32: Stream] = [:]
    /// Stream ids in the order they were opened: deadlines grow in that order, so the sweep looks at the front only.
    private var order = Deque<UInt32>()
    /// Streams whose body waits for window, oldest first.
    private var blocked = Deque<UInt32>()
    private var nextStreamID: UInt32
    private var goAwayLastStreamID: UInt32?
    private var settingsReceived = false
    /// A header block whose CONTINUATION frames are still to come.
    private var partialHeaders: (streamID: UInt32, block: ByteBuffer, endStream: Bool)?
    private var peerMaxFrameSize = HTTP2Protocol.minMaxFrameSize
    private var peerInitialWindowSize = HTTP2Protocol.defaultWindowSize
    private var connectionSendWindow = HTTP2Protocol.defaultWindowSize
    private var connectionReceiveWindow = HTTP2Protocol.defaultWindowSize
    /// Control frames (acknowledgements, window updates) written while reading, flushed when the read completes.
    private var control: ByteBuffer?
    private var lastActivity = NIODeadline.now()
    private var sweep: RepeatedTask?
    /// Why the connection is closing, for the streams it fails.
    private var closeReason: APNSClientError?

    init(events: Events, requestTimeout: TimeAmount, pingInterval: TimeAmount, firstStreamID: UInt32 = 1) {
        self.events = events
        self.requestTimeout = requestTimeout
        self.pingInterval = pingInterval
        self.nextStreamID = firstStreamID
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
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
        var buffer = context.channel.allocator.buffer(capacity: 64)
        buffer.writeBytes(HTTP2Protocol.clientPreface)
        buffer.writeHTTP2Settings([
            (.enablePush, 0),
            (.maxConcurrentStreams, 100),
            (.initialWindowSize, HTTP2Protocol.defaultWindowSize),
        ])
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    // MARK: Requests

    /// Opens a stream for each request and writes them all with one flush. Requests the connection can no longer
    /// take fail at once with `notProcessed`.
    func write(_ requests: [APNSStreamRequest]) {
        guard let context, context.channel.isActive, goAwayLastStreamID == nil, closeReason == nil else {
            let error = closeReason.map { APNSClientError(.notProcessed, "The connection is closing (\($0.message)); the notification was not sent on it.") }
                ?? APNSClientError(.notProcessed, "The connection is closing; the notification was not sent on it.")
            for request in requests { request.onResponse(.failure(error)) }
            return
        }
        if !blocked.isEmpty { resumeBlockedBodies() }
        var buffer = takeControlBuffer(context: context, capacity: requests.count * 512)
        let deadline = NIODeadline.now() + requestTimeout
        for request in requests {
            guard nextStreamID <= Self.maximumStreamID else {
                request.onResponse(.failure(APNSClientError(.notProcessed, "The connection ran out of stream ids; the notification was not sent on it.")))
                continue
            }
            let streamID = nextStreamID
            nextStreamID += 2
            writeHeaders(streamID: streamID, request: request, endStream: request.body.readableBytes == 0, into: &buffer)
            var stream = Stream(onResponse: request.onResponse, deadline: deadline, sendWindow: peerInitialWindowSize)
            if request.body.readableBytes > 0 {
                var body = request.body
                writeData(streamID: streamID, stream: &stream, body: &body, into: &buffer)
                if body.readableBytes > 0 {
                    stream.unsentBody = body
                    blocked.append(streamID)
                }
            }
            streams[streamID] = stream
            order.append(streamID)
        }
        lastActivity = deadline - requestTimeout
        context.write(wrapOutboundOut(buffer), promise: nil)
        context.flush()
        if nextStreamID > Self.maximumStreamID, goAwayLastStreamID == nil {
            // Stream ids cannot be reused: the pool must open another connection (RFC 9113 §5.1.1).
            goAwayLastStreamID = Self.maximumStreamID
            events.goingAway("stream ids exhausted")
        }
    }

    private func writeHeaders(streamID: UInt32, request: APNSStreamRequest, endStream: Bool, into buffer: inout ByteBuffer) {
        let start = buffer.writerIndex
        buffer.writeHTTP2Headers(streamID: streamID, endStream: endStream) { block in
            encoder.encode(template: request.template, tokenHex: request.token.hex, apnsID: request.apnsID, into: &block)
        }
        let length = buffer.writerIndex - start - HTTP2Protocol.frameHeaderLength
        guard length > peerMaxFrameSize else { return }
        // Larger than the server's frame size: split into HEADERS and CONTINUATION frames (RFC 9113 §6.10).
        var block = buffer.getSlice(at: start + HTTP2Protocol.frameHeaderLength, length: length)!
        buffer.moveWriterIndex(to: start)
        var first = true
        while block.readableBytes > 0 {
            let chunk = block.readSlice(length: min(peerMaxFrameSize, block.readableBytes))!
            let last = block.readableBytes == 0
            let flags = (last ? HTTP2Flags.endHeaders : 0) | (first && endStream ? HTTP2Flags.endStream : 0)
            buffer.writeHTTP2FrameHeader(length: chunk.readableBytes, type: first ? .headers : .continuation, flags: flags, streamID: streamID)
            buffer.writeImmutableBuffer(chunk)
            first = false
        }
    }

    /// Writes as much of `body` as the windows allow; what is left stays in `body`.
    private func writeData(streamID: UInt32, stream: inout Stream, body: inout ByteBuffer, into buffer: inout ByteBuffer) {
        while body.readableBytes > 0 {
            let length = min(body.readableBytes, connectionSendWindow, stream.sendWindow, peerMaxFrameSize)
            guard length > 0 else { return }
            let chunk = body.readSlice(length: length)!
            buffer.writeHTTP2Data(streamID: streamID, buffer: chunk, endStream: body.readableBytes == 0)
            connectionSendWindow -= length
            stream.sendWindow -= length
        }
    }

    /// Sends waiting bodies, oldest first, as far as the windows now allow.
    private func resumeBlockedBodies() {
        guard let context else { return }
        var buffer = takeControlBuffer(context: context, capacity: 1024)
        var stillBlocked = Deque<UInt32>()
        while let streamID = blocked.popFirst() {
            guard var stream = streams[streamID], var body = stream.unsentBody else { continue }
            if connectionSendWindow > 0 { writeData(streamID: streamID, stream: &stream, body: &body, into: &buffer) }
            stream.unsentBody = body.readableBytes > 0 ? body : nil
            streams[streamID] = stream
            if body.readableBytes > 0 { stillBlocked.append(streamID) }
        }
        blocked = stillBlocked
        control = buffer
    }

    private func takeControlBuffer(context: ChannelHandlerContext, capacity: Int) -> ByteBuffer {
        if let buffer = control {
            control = nil
            return buffer
        }
        return context.channel.allocator.buffer(capacity: capacity)
    }

    private func writeControl(_ write: (inout ByteBuffer) -> Void) {
        guard let context else { return }
        var buffer = takeControlBuffer(context: context, capacity: 64)
        write(&buffer)
        control = buffer
    }

    private func flushControl() {
        guard let context, let buffer = control else { return }
        control = nil
        guard buffer.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    // MARK: Frames in

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reader.append(unwrapInboundIn(data))
        lastActivity = .now()
        do {
            while closeReason == nil, let frame = try reader.nextFrame() {
                try receive(frame)
            }
        } catch let error as ConnectionError {
            connectionError(error)
        } catch let error as HTTP2FrameReader.FrameTooLarge {
            connectionError(ConnectionError(code: .frameSizeError, message: "a \(error.length)-byte frame, above the 16,384 bytes allowed"))
        } catch {
            connectionError(ConnectionError(code: .internalError, message: "\(error)"))
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushControl()
        context.fireChannelReadComplete()
    }

    private func receive(_ frame: HTTP2Frame) throws(ConnectionError) {
        if let partial = partialHeaders {
            guard frame.type == HTTP2FrameType.continuation.rawValue, frame.streamID == partial.streamID else {
                throw ConnectionError(code: .protocolError, message: "a header block interrupted by another frame")
            }
            var block = partial.block
            var payload = frame.payload
            block.writeBuffer(&payload)
            if frame.has(HTTP2Flags.endHeaders) {
                partialHeaders = nil
                try receivedHeaders(streamID: partial.streamID, block: block, endStream: partial.endStream)
            } else {
                partialHeaders = (partial.streamID, block, partial.endStream)
            }
            return
        }
        guard settingsReceived || frame.type == HTTP2FrameType.settings.rawValue else {
            throw ConnectionError(code: .protocolError, message: "the server's first frame was not SETTINGS")
        }
        switch frame.knownType {
        case .data: try receivedData(frame)
        case .headers:
            guard frame.streamID != 0 else { throw ConnectionError(code: .protocolError, message: "HEADERS on stream 0") }
            guard let block = frame.unpaddedPayload() else { throw ConnectionError(code: .protocolError, message: "HEADERS with bad padding") }
            if frame.has(HTTP2Flags.endHeaders) {
                try receivedHeaders(streamID: frame.streamID, block: block, endStream: frame.has(HTTP2Flags.endStream))
            } else {
                partialHeaders = (frame.streamID, block, frame.has(HTTP2Flags.endStream))
            }
        case .rstStream:
            guard frame.streamID != 0, let code = frame.resetCode else {
                throw ConnectionError(code: .protocolError, message: "a malformed RST_STREAM")
            }
            receivedReset(streamID: frame.streamID, code: code)
        case .settings: try receivedSettings(frame)
        case .ping:
            guard frame.streamID == 0, let opaque = frame.pingData else { throw ConnectionError(code: .protocolError, message: "a malformed PING") }
            if !frame.has(HTTP2Flags.ack) {
                writeControl { $0.writeHTTP2Ping(opaque, ack: true) }
            }
        case .goAway:
            guard frame.streamID == 0, frame.payload.readableBytes >= 8 else { throw ConnectionError(code: .protocolError, message: "a malformed GOAWAY") }
            var payload = frame.payload
            let lastStreamID = payload.readInteger(as: UInt32.self)! & 0x7FFF_FFFF
            let code = payload.readInteger(as: UInt32.self)!
            receivedGoAway(lastStreamID: lastStreamID, code: code, debugData: payload)
        case .windowUpdate: try receivedWindowUpdate(frame)
        case .pushPromise:
            throw ConnectionError(code: .protocolError, message: "PUSH_PROMISE although this client disabled server push")
        case .continuation:
            throw ConnectionError(code: .protocolError, message: "CONTINUATION without a header block to continue")
        case .priority, nil:
            break  // PRIORITY is advisory; unknown frame types must be ignored (RFC 9113 §4.1).
        }
    }

    private func receivedData(_ frame: HTTP2Frame) throws(ConnectionError) {
        guard frame.streamID != 0 else { throw ConnectionError(code: .protocolError, message: "DATA on stream 0") }
        // The whole payload, padding included, counts against the windows (RFC 9113 §6.9.1).
        let length = frame.payload.readableBytes
        connectionReceiveWindow -= length
        guard connectionReceiveWindow >= 0 else {
            throw ConnectionError(code: .flowControlError, message: "DATA beyond the connection's flow-control window")
        }
        if connectionReceiveWindow <= HTTP2Protocol.defaultWindowSize / 2 {
            let increment = HTTP2Protocol.defaultWindowSize - connectionReceiveWindow
            connectionReceiveWindow = HTTP2Protocol.defaultWindowSize
            writeControl { $0.writeHTTP2WindowUpdate(streamID: 0, increment: increment) }
        }
        guard let payload = frame.unpaddedPayload() else { throw ConnectionError(code: .protocolError, message: "DATA with bad padding") }
        // A stream that timed out or was reset is gone; its late data only counted for the connection window.
        guard var stream = streams[frame.streamID] else { return }
        stream.receiveWindow -= length
        guard stream.receiveWindow >= 0 else {
            throw ConnectionError(code: .flowControlError, message: "DATA beyond stream \(frame.streamID)'s flow-control window")
        }
        if stream.response.body == nil { stream.response.body = payload } else { stream.response.body!.writeImmutableBuffer(payload) }
        if frame.has(HTTP2Flags.endStream) {
            complete(frame.streamID, stream)
            return
        }
        if stream.receiveWindow <= HTTP2Protocol.defaultWindowSize / 2 {
            let increment = HTTP2Protocol.defaultWindowSize - stream.receiveWindow
            stream.receiveWindow = HTTP2Protocol.defaultWindowSize
            writeControl { $0.writeHTTP2WindowUpdate(streamID: frame.streamID, increment: increment) }
        }
        streams[frame.streamID] = stream
    }

    private func receivedHeaders(streamID: UInt32, block: ByteBuffer, endStream: Bool) throws(ConnectionError) {
        // Every block is decoded, even for streams already gone, to keep the HPACK table in step with the server's.
        var block = block
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &block)
        } catch {
            throw ConnectionError(code: .compressionError, message: "an undecodable header block (\(error))")
        }
        guard var stream = streams[streamID] else { return }
        if stream.response.status == 0 {
            var status = 0
            for (name, value, _) in headers {
                switch name {
                case ":status": status = Int(value) ?? 0
                case "apns-id": stream.response.apnsID = value
                case "apns-unique-id": stream.response.uniqueID = value
                default: break
                }
            }
            guard (200...599).contains(status) else {
                // 1xx is informational (APNs sends none); anything else is no HTTP status.
                if (100...199).contains(status) { return }
                throw ConnectionError(code: .protocolError, message: "a response without a valid :status")
            }
            stream.response.status = status
        }
        if endStream { complete(streamID, stream) } else { streams[streamID] = stream }
    }

    private func receivedReset(streamID: UInt32, code: UInt32) {
        // REFUSED_STREAM means the server did not process it: safe to send again.
        let error = code == HTTP2ErrorCode.refusedStream.rawValue
            ? APNSClientError(.notProcessed, "APNs refused the stream (REFUSED_STREAM); it was not processed.")
            : APNSClientError(.connectionClosed, "APNs reset the stream (\(Self.name(ofErrorCode: code))) before answering.")
        fail(streamID, error)
    }

    private func receivedSettings(_ frame: HTTP2Frame) throws(ConnectionError) {
        guard frame.streamID == 0 else { throw ConnectionError(code: .protocolError, message: "SETTINGS on a stream") }
        if frame.has(HTTP2Flags.ack) {
            guard frame.payload.readableBytes == 0 else { throw ConnectionError(code: .frameSizeError, message: "a SETTINGS acknowledgement with a payload") }
            return
        }
        guard frame.payload.readableBytes % 6 == 0 else { throw ConnectionError(code: .frameSizeError, message: "a SETTINGS frame of \(frame.payload.readableBytes) bytes") }
        var payload = frame.payload
        var streamLimit: Int?
        var windowChanged = false
        while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            switch HTTP2SettingID(rawValue: id) {
            case .headerTableSize:
                encoder.peerMaximumSizeChanged(to: Int(value))
            case .maxConcurrentStreams:
                streamLimit = Int(value)
            case .initialWindowSize:
                guard value <= UInt32(HTTP2Protocol.maxWindowSize) else {
                    throw ConnectionError(code: .flowControlError, message: "an initial window size of \(value), above 2^31-1")
                }
                // Open streams' windows move by the difference (RFC 9113 §6.9.2).
                let delta = Int(value) - peerInitialWindowSize
                peerInitialWindowSize = Int(value)
                if delta != 0 {
                    for key in streams.keys { streams[key]!.sendWindow += delta }
                    windowChanged = delta > 0
                }
            case .maxFrameSize:
                guard (HTTP2Protocol.minMaxFrameSize...HTTP2Protocol.maxMaxFrameSize).contains(Int(value)) else {
                    throw ConnectionError(code: .protocolError, message: "a maximum frame size of \(value)")
                }
                peerMaxFrameSize = Int(value)
            case .enablePush, .maxHeaderListSize, nil:
                break
            }
        }
        writeControl { $0.writeHTTP2SettingsAck() }
        if !settingsReceived {
            settingsReceived = true
            events.streamLimitChanged(streamLimit ?? Self.defaultStreamLimit)
        } else if let streamLimit {
            events.streamLimitChanged(streamLimit)
        }
        if windowChanged, !blocked.isEmpty { resumeBlockedBodies() }
    }

    private func receivedWindowUpdate(_ frame: HTTP2Frame) throws(ConnectionError) {
        guard let increment = frame.windowIncrement else {
            throw ConnectionError(code: .frameSizeError, message: "a WINDOW_UPDATE of \(frame.payload.readableBytes) bytes")
        }
        if frame.streamID == 0 {
            guard increment > 0 else { throw ConnectionError(code: .protocolError, message: "a connection WINDOW_UPDATE of 0") }
            connectionSendWindow += increment
            guard connectionSendWindow <= HTTP2Protocol.maxWindowSize else {
                throw ConnectionError(code: .flowControlError, message: "a connection window above 2^31-1")
            }
        } else {
            guard streams[frame.streamID] != nil else { return }
            guard increment > 0, streams[frame.streamID]!.sendWindow + increment <= HTTP2Protocol.maxWindowSize else {
                // A stream error (RFC 9113 §6.9): only that stream ends.
                writeControl { $0.writeHTTP2RSTStream(streamID: frame.streamID, error: increment == 0 ? .protocolError : .flowControlError) }
                fail(frame.streamID, APNSClientError(.connectionClosed, "APNs sent an invalid WINDOW_UPDATE for the stream; it was reset."))
                return
            }
            streams[frame.streamID]!.sendWindow += increment
        }
        if !blocked.isEmpty { resumeBlockedBodies() }
    }

    private func receivedGoAway(lastStreamID: UInt32, code: UInt32, debugData: ByteBuffer) {
        let reason = Self.reason(in: debugData) ?? (code == 0 ? nil : Self.name(ofErrorCode: code))
        let first = goAwayLastStreamID == nil
        goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
        if first { events.goingAway(reason) }
        let unprocessed = APNSClientError(.notProcessed, "APNs sent GOAWAY (\(reason ?? "no reason")) before processing the stream.")
        for streamID in streams.keys where streamID > lastStreamID { fail(streamID, unprocessed) }
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
    private func connectionError(_ error: ConnectionError) {
        guard closeReason == nil, let context else { return }
        let name = Self.name(ofErrorCode: error.code.rawValue)
        closeReason = APNSClientError(.connectionClosed, "APNs broke the HTTP/2 protocol (\(name): \(error.message)); the connection was closed.")
        writeControl { $0.writeHTTP2GoAway(lastStreamID: 0, error: error.code, debugData: Array(error.message.utf8)) }
        flushControl()
        context.close(promise: nil)
    }

    // MARK: Bookkeeping

    private func complete(_ streamID: UInt32, _ stream: Stream) {
        streams[streamID] = nil
        if stream.unsentBody != nil {
            // APNs answered before the whole body went out: stop sending it (RFC 9113 §8.1).
            writeControl { $0.writeHTTP2RSTStream(streamID: streamID, error: .cancel) }
        }
        stream.onResponse(.success(stream.response))
        settled()
    }

    private func fail(_ streamID: UInt32, _ error: APNSClientError) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.onResponse(.failure(error))
        settled()
    }

    private func settled() {
        guard streams.isEmpty else { return }
        order.removeAll(keepingCapacity: true)
        blocked.removeAll(keepingCapacity: true)
        events.streamsIdle()
        if goAwayLastStreamID != nil { context?.close(promise: nil) }
    }

    private func sweepDeadlines() {
        guard let context else { return }
        let now = NIODeadline.now()
        while let streamID = order.first {
            guard let stream = streams[streamID] else {
                order.removeFirst()
                continue
            }
            guard stream.deadline <= now else { break }
            order.removeFirst()
            writeControl { $0.writeHTTP2RSTStream(streamID: streamID, error: .cancel) }
            fail(streamID, APNSClientError(.timeout, "APNs did not answer within \(requestTimeout.nanoseconds / 1_000_000) ms."))
        }
        if streams.isEmpty, now - lastActivity >= pingInterval, context.channel.isActive {
            lastActivity = now
            writeControl { $0.writeHTTP2Ping(UInt64(truncatingIfNeeded: now.uptimeNanoseconds), ack: false) }
        }
        flushControl()
    }

    private static func name(ofErrorCode code: UInt32) -> String {
        switch HTTP2ErrorCode(rawValue: code) {
        case .noError: "NO_ERROR"
        case .protocolError: "PROTOCOL_ERROR"
        case .internalError: "INTERNAL_ERROR"
        case .flowControlError: "FLOW_CONTROL_ERROR"
        case .settingsTimeout: "SETTINGS_TIMEOUT"
        case .streamClosed: "STREAM_CLOSED"
        case .frameSizeError: "FRAME_SIZE_ERROR"
        case .refusedStream: "REFUSED_STREAM"
        case .cancel: "CANCEL"
        case .compressionError: "COMPRESSION_ERROR"
        case .connectError: "CONNECT_ERROR"
        case .enhanceYourCalm: "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: "INADEQUATE_SECURITY"
        case .http11Required: "HTTP_1_1_REQUIRED"
        case nil: "error 0x" + String(code, radix: 16)
        }
    }

    private static func reason(in buffer: ByteBuffer) -> String? {
        guard buffer.readableBytes > 0 else { return nil }
        guard let value = try? JSONValue(parsing: buffer.readableBytesView) else { return String(buffer: buffer) }
        return value["reason"]?.stringValue
    }
}
