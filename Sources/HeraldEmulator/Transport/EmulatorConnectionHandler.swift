import DequeModule
import HeraldCore
import HeraldHTTP2
import NIOCore
import NIOHPACK

/// Serves APNs' side of one HTTP/2 connection: frames in, requests checked by the ``RequestProcessor``, answers out.
///
/// It works on the byte stream (after TLS) with Herald's framing layer rather than a general HTTP/2 server: APNs
/// traffic is one small request and one small answer per stream, and a child channel with its own pipeline per
/// stream cost more than the checks themselves. Everything runs on the connection's event loop; answers given
/// during one read are written together and flushed once when the read ends.
final class EmulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Settings {
        var processor: RequestProcessor
        var faults: FaultInjector
        var clock: any WallClock
        /// `MAX_CONCURRENT_STREAMS` once a request has proven its credential.
        var maxConcurrentStreams: Int
        /// Certificate connections are authenticated by the handshake and start at the full limit.
        var authentication: ConnectionAuthentication
        var initialStreams: Int
    }

    private struct Stream {
        var method = ""
        var path = ""
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
        /// Every body byte received; `body` keeps only the first ``EmulatorConnectionHandler/bodyCap``.
        var bodyLength = 0
        var contentLength: Int?
        var receivedEnd = false
        /// Bytes consumed on this stream and not yet returned with a WINDOW_UPDATE.
        var unacknowledged = 0
        var sendWindow: Int
        /// Set once the request went to the processor: later frames for it are a protocol error or ignored.
        var answering = false
    }

    /// An answer that has to wait: for its added latency, or for the client to open the flow-control window.
    private struct BlockedData {
        var streamID: UInt32
        var body: [UInt8]
    }

    private struct DelayedAnswer {
        var streamID: UInt32
        var response: EmulatedResponse
        var goAway: Bool
    }

    private struct ConnectionError: Error {
        var code: HTTP2ErrorCode
        var message: String
    }

    private struct HeaderBlock {
        var streamID: UInt32
        var endStream: Bool
        var fragments: ByteBuffer
    }

    /// The largest request body kept: bigger ones are only counted, to answer `PayloadTooLarge` without storing them.
    private static let bodyCap = APNSPushType.voip.maximumPayloadSize + 1
    /// The connection receive window: large enough that a thousand concurrent requests never wait for an update.
    private static let connectionWindow = 1 << 24
    private static let goAwayReason = #"{"reason":"Maximum active streams violated for this endpoint."}"#

    private let settings: Settings
    private var authentication: ConnectionAuthentication
    private var ids = IDGenerator()
    private var reader = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.minMaxFrameSize)
    private var decoder: HPACKDecoder
    private var out = ByteBuffer()
    private var context: ChannelHandlerContext?

    private var prefaceReceived = false
    private var settingsReceived = false
    private var streams: [UInt32: Stream] = [:]
    private var lastClientStreamID: UInt32 = 0
    private var pendingHeaders: HeaderBlock?
    private var blocked = Deque<BlockedData>()

    /// Limits this side advertised, in order, not yet acknowledged; a limit applies once the client acknowledged it.
    private var unacknowledgedLimits: [Int?] = []
    private var streamLimit = Int.max
    private var streamLimitRaised = false

    private var peerInitialWindow = HTTP2Protocol.defaultWindowSize
    private var connectionSendWindow = HTTP2Protocol.defaultWindowSize
    private var connectionUnacknowledged = 0

    private var streamsServed = 0
    /// Answers scheduled for later (added latency); a GOAWAY closes the connection once they are written.
    private var delayed = 0
    /// Answers waiting for their added latency, by the millisecond (of the loop's uptime clock) they are due.
    private var delayedAnswers: [UInt64: [DelayedAnswer]] = [:]
    private var goAwayLastStreamID: UInt32?
    private var closing = false

    init(settings: Settings) {
        self.settings = settings
        self.authentication = settings.authentication
        self.decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4096, maxHeaderListSize: 8000)
        streamLimitRaised = settings.initialStreams > 1
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        out = context.channel.allocator.buffer(capacity: 16_384)
        // APNs' initial SETTINGS (apns-protocol.md §10): one stream until a request proves its credential.
        out.writeHTTP2Settings([
            (.headerTableSize, 4096), (.maxConcurrentStreams, settings.initialStreams),
            (.maxFrameSize, HTTP2Protocol.minMaxFrameSize), (.maxHeaderListSize, 8000),
        ])
        unacknowledgedLimits.append(settings.initialStreams)
        out.writeHTTP2WindowUpdate(streamID: 0, increment: Self.connectionWindow - HTTP2Protocol.defaultWindowSize)
        flush()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        closing = true
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        reader.append(unwrapInboundIn(data))
        do {
            if !prefaceReceived {
                guard let preface = reader.readBytes(HTTP2Protocol.clientPreface.count) else { return }
                guard preface == HTTP2Protocol.clientPreface else {
                    throw ConnectionError(code: .protocolError, message: "Expected the HTTP/2 connection preface.")
                }
                prefaceReceived = true
            }
            while !closing, let frame = try nextFrame() {
                try handle(frame)
            }
        } catch {
            fail(error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS and socket errors end the connection; there is no one to answer.
        closing = true
        context.close(promise: nil)
    }

    private func nextFrame() throws -> HTTP2Frame? {
        do {
            return try reader.nextFrame()
        } catch {
            throw ConnectionError(code: .frameSizeError, message: "A \(error.length)-byte frame exceeds SETTINGS_MAX_FRAME_SIZE.")
        }
    }

    // MARK: Frames

    private func handle(_ frame: HTTP2Frame) throws {
        if !settingsReceived {
            guard frame.knownType == .settings, !frame.has(HTTP2Flags.ack) else {
                throw ConnectionError(code: .protocolError, message: "The first frame must be SETTINGS.")
            }
            settingsReceived = true
        }
        if let pending = pendingHeaders, frame.knownType != .continuation || frame.streamID != pending.streamID {
            throw ConnectionError(code: .protocolError, message: "Expected CONTINUATION for stream \(pending.streamID).")
        }
        switch frame.knownType {
        case .data: try receiveData(frame)
        case .headers: try receiveHeaders(frame)
        case .continuation: try receiveContinuation(frame)
        case .settings: try receiveSettings(frame)
        case .ping: try receivePing(frame)
        case .windowUpdate: try receiveWindowUpdate(frame)
        case .rstStream: try receiveReset(frame)
        case .priority:
            guard frame.streamID != 0 else { throw ConnectionError(code: .protocolError, message: "PRIORITY on stream 0.") }
            if frame.payload.readableBytes != 5 { resetStream(frame.streamID, .frameSizeError) }
        case .goAway:
            guard frame.streamID == 0 else { throw ConnectionError(code: .protocolError, message: "GOAWAY on a stream.") }
        case .pushPromise:
            throw ConnectionError(code: .protocolError, message: "Clients must not send PUSH_PROMISE.")
        case nil:
            break  // Unknown frame types are ignored (RFC 9113 §4.1).
        }
    }

    private func receiveSettings(_ frame: HTTP2Frame) throws {
        guard frame.streamID == 0 else { throw ConnectionError(code: .protocolError, message: "SETTINGS on a stream.") }
        if frame.has(HTTP2Flags.ack) {
            guard frame.payload.readableBytes == 0 else { throw ConnectionError(code: .frameSizeError, message: "SETTINGS ACK with a payload.") }
            guard !unacknowledgedLimits.isEmpty else { throw ConnectionError(code: .protocolError, message: "Unexpected SETTINGS ACK.") }
            if let limit = unacknowledgedLimits.removeFirst() { streamLimit = limit }
            return
        }
        guard frame.payload.readableBytes % 6 == 0 else { throw ConnectionError(code: .frameSizeError, message: "SETTINGS length is not a multiple of 6.") }
        var payload = frame.payload
        while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            switch HTTP2SettingID(rawValue: id) {
            case .enablePush:
                guard value <= 1 else { throw ConnectionError(code: .protocolError, message: "SETTINGS_ENABLE_PUSH must be 0 or 1.") }
            case .initialWindowSize:
                guard value <= UInt32(HTTP2Protocol.maxWindowSize) else {
                    throw ConnectionError(code: .flowControlError, message: "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1.")
                }
                let delta = Int(value) - peerInitialWindow
                peerInitialWindow = Int(value)
                for id in streams.keys { streams[id]!.sendWindow += delta }
            case .maxFrameSize:
                guard (HTTP2Protocol.minMaxFrameSize...HTTP2Protocol.maxMaxFrameSize).contains(Int(value)) else {
                    throw ConnectionError(code: .protocolError, message: "SETTINGS_MAX_FRAME_SIZE out of range.")
                }
            default:
                break  // Answers are a few hundred bytes and use no dynamic table: the other settings do not matter.
            }
        }
        out.writeHTTP2SettingsAck()
        writeBlockedData()
    }

    private func receivePing(_ frame: HTTP2Frame) throws {
        guard frame.streamID == 0 else { throw ConnectionError(code: .protocolError, message: "PING on a stream.") }
        guard let data = frame.pingData else { throw ConnectionError(code: .frameSizeError, message: "PING payload is not 8 bytes.") }
        if !frame.has(HTTP2Flags.ack) { out.writeHTTP2Ping(data, ack: true) }
    }

    private func receiveWindowUpdate(_ frame: HTTP2Frame) throws {
        guard let increment = frame.windowIncrement else {
            throw ConnectionError(code: .frameSizeError, message: "WINDOW_UPDATE payload is not 4 bytes.")
        }
        if frame.streamID == 0 {
            guard increment > 0 else { throw ConnectionError(code: .protocolError, message: "WINDOW_UPDATE with increment 0.") }
            connectionSendWindow += increment
            guard connectionSendWindow <= HTTP2Protocol.maxWindowSize else {
                throw ConnectionError(code: .flowControlError, message: "The connection window exceeds 2^31-1.")
            }
        } else if streams[frame.streamID] != nil {
            guard increment > 0 else { return resetStream(frame.streamID, .protocolError) }
            streams[frame.streamID]!.sendWindow += increment
            if streams[frame.streamID]!.sendWindow > HTTP2Protocol.maxWindowSize { return resetStream(frame.streamID, .flowControlError) }
        } else if frame.streamID > lastClientStreamID {
            throw ConnectionError(code: .protocolError, message: "WINDOW_UPDATE on idle stream \(frame.streamID).")
        }
        writeBlockedData()
    }

    private func receiveReset(_ frame: HTTP2Frame) throws {
        guard frame.streamID != 0 else { throw ConnectionError(code: .protocolError, message: "RST_STREAM on stream 0.") }
        guard frame.resetCode != nil else { throw ConnectionError(code: .frameSizeError, message: "RST_STREAM payload is not 4 bytes.") }
        guard frame.streamID <= lastClientStreamID else { throw ConnectionError(code: .protocolError, message: "RST_STREAM on idle stream \(frame.streamID).") }
        streams[frame.streamID] = nil
        blocked.removeAll { $0.streamID == frame.streamID }
    }

    private func receiveData(_ frame: HTTP2Frame) throws {
        let length = frame.payload.readableBytes
        guard frame.streamID != 0 else { throw ConnectionError(code: .protocolError, message: "DATA on stream 0.") }
        // Flow control counts the whole frame, padding included, whatever happens to the stream.
        connectionUnacknowledged += length
        if connectionUnacknowledged >= Self.connectionWindow / 2 {
            out.writeHTTP2WindowUpdate(streamID: 0, increment: connectionUnacknowledged)
            connectionUnacknowledged = 0
        }
        guard var stream = streams[frame.streamID] else {
            guard frame.streamID <= lastClientStreamID else { throw ConnectionError(code: .protocolError, message: "DATA on idle stream \(frame.streamID).") }
            return resetStream(frame.streamID, .streamClosed)
        }
        guard !stream.receivedEnd else { return resetStream(frame.streamID, .streamClosed) }
        guard let data = frame.unpaddedPayload() else { throw ConnectionError(code: .protocolError, message: "DATA padding exceeds the frame.") }
        stream.unacknowledged += length
        guard stream.unacknowledged <= HTTP2Protocol.defaultWindowSize else { throw ConnectionError(code: .flowControlError, message: "Stream \(frame.streamID) exceeded its window.") }
        let room = max(0, Self.bodyCap - stream.body.count)
        stream.body.append(contentsOf: data.readableBytesView.prefix(room))
        stream.bodyLength += data.readableBytes
        if frame.has(HTTP2Flags.endStream) {
            stream.receivedEnd = true
        } else if stream.unacknowledged >= HTTP2Protocol.defaultWindowSize / 2 {
            out.writeHTTP2WindowUpdate(streamID: frame.streamID, increment: stream.unacknowledged)
            stream.unacknowledged = 0
        }
        streams[frame.streamID] = stream
        if stream.receivedEnd { complete(frame.streamID) }
    }

    private func receiveHeaders(_ frame: HTTP2Frame) throws {
        guard frame.streamID != 0 else { throw ConnectionError(code: .protocolError, message: "HEADERS on stream 0.") }
        guard let fragment = frame.unpaddedPayload() else { throw ConnectionError(code: .protocolError, message: "HEADERS padding exceeds the frame.") }
        let block = HeaderBlock(streamID: frame.streamID, endStream: frame.has(HTTP2Flags.endStream), fragments: fragment)
        if frame.has(HTTP2Flags.endHeaders) {
            try receiveHeaderBlock(block)
        } else {
            pendingHeaders = block
        }
    }

    private func receiveContinuation(_ frame: HTTP2Frame) throws {
        guard var block = pendingHeaders, block.streamID == frame.streamID else {
            throw ConnectionError(code: .protocolError, message: "CONTINUATION without HEADERS.")
        }
        var fragment = frame.payload
        block.fragments.writeBuffer(&fragment)
        guard block.fragments.readableBytes <= 64 * 1024 else {
            throw ConnectionError(code: .enhanceYourCalm, message: "Header block too large.")
        }
        if frame.has(HTTP2Flags.endHeaders) {
            pendingHeaders = nil
            try receiveHeaderBlock(block)
        } else {
            pendingHeaders = block
        }
    }

    private func receiveHeaderBlock(_ block: HeaderBlock) throws {
        var fragments = block.fragments
        // Every block is decoded, even for streams that are ignored: the HPACK table is shared by the connection.
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &fragments)
        } catch {
            throw ConnectionError(code: .compressionError, message: "The header block could not be decoded.")
        }
        let id = block.streamID
        if var stream = streams[id] {
            // Trailers: they must end the stream.
            guard !stream.receivedEnd, block.endStream else { return resetStream(id, .protocolError) }
            stream.receivedEnd = true
            streams[id] = stream
            return complete(id)
        }
        guard id % 2 == 1, id > lastClientStreamID else {
            throw ConnectionError(code: .protocolError, message: "Stream \(id) is not a new client stream.")
        }
        lastClientStreamID = id
        if let last = goAwayLastStreamID, id > last { return }  // after our GOAWAY: not processed, the client re-sends
        guard streams.count < streamLimit else {
            // More streams than advertised: APNs refuses the connection with these words.
            out.writeHTTP2GoAway(lastStreamID: id - 2, error: .enhanceYourCalm, debugData: Array(Self.goAwayReason.utf8))
            goAwayLastStreamID = id - 2
            closeAfterFlush()
            return
        }
        var stream = Stream(sendWindow: peerInitialWindow)
        guard Self.read(headers, into: &stream) else { return resetStream(id, .protocolError) }
        stream.receivedEnd = block.endStream
        streams[id] = stream
        if block.endStream { complete(id) }
    }

    /// Copies a request's headers, checking the rules of RFC 9113 §8.2–8.3 that make a request malformed.
    private static func read(_ headers: HPACKHeaders, into stream: inout Stream) -> Bool {
        var scheme = false
        var regular = false
        stream.headers.reserveCapacity(8)
        for header in headers {
            let name = header.name
            guard !name.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return false }
            if name.utf8.first == UInt8(ascii: ":") {
                guard !regular else { return false }
                switch name {
                case ":method":
                    guard stream.method.isEmpty else { return false }
                    stream.method = header.value
                case ":path":
                    guard stream.path.isEmpty else { return false }
                    stream.path = header.value
                case ":scheme":
                    guard !scheme else { return false }
                    scheme = true
                case ":authority": break
                default: return false
                }
                continue
            }
            regular = true
            switch name {
            case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade": return false
            case "te": guard header.value == "trailers" else { return false }
            case "content-length":
                guard let length = Int(header.value), length >= 0 else { return false }
                stream.contentLength = length
            default: break
            }
            stream.headers.append((name, header.value))
        }
        return scheme && !stream.method.isEmpty && !stream.path.isEmpty
    }

    // MARK: Answers

    /// The request is complete: check it, then answer now or after the added latency.
    private func complete(_ streamID: UInt32) {
        guard var stream = streams[streamID], !stream.answering else { return }
        if let length = stream.contentLength, length != stream.bodyLength { return resetStream(streamID, .protocolError) }
        stream.answering = true
        stream.unacknowledged = 0  // the stream is closing; no update needed
        let request = EmulatedRequest(method: stream.method, path: stream.path, headers: stream.headers, body: stream.body)
        stream.headers = []
        stream.body = []
        streams[streamID] = stream

        let response = settings.processor.process(request, connection: &authentication, now: settings.clock.now(), ids: &ids)
        if authentication.hasValidatedRequest, !streamLimitRaised {
            streamLimitRaised = true
            out.writeHTTP2Settings([(.maxConcurrentStreams, settings.maxConcurrentStreams)])
            unacknowledgedLimits.append(settings.maxConcurrentStreams)
        }
        streamsServed += 1

        switch response.fault {
        case .reset:
            // The answers already given go out first; this stream, and the ones not yet read, get none.
            closeAfterFlush()
            return
        case .noResponse:
            return  // The stream stays open (and counts against the limit) until the client gives up.
        default:
            break
        }
        let goAway = response.fault == .goAway || settings.faults.configuration.goAwayAfterStreams.map { streamsServed >= $0 } ?? false
        if response.delayMilliseconds > 0, let context {
            delay(DelayedAnswer(streamID: streamID, response: response, goAway: goAway), by: response.delayMilliseconds, context: context)
        } else {
            answer(streamID, response, goAway: goAway)
        }
    }

    /// Holds an answer back for its added latency. Answers due in the same millisecond share one timer and one
    /// flush: a timer and a TLS record per answer would cost both ends more than the answers themselves.
    private func delay(_ answer: DelayedAnswer, by milliseconds: Double, context: ChannelHandlerContext) {
        delayed += 1
        let due = NIODeadline.now() + .nanoseconds(Int64(milliseconds * 1_000_000))
        let millisecond = (due.uptimeNanoseconds + 999_999) / 1_000_000
        if delayedAnswers[millisecond] != nil {
            delayedAnswers[millisecond]!.append(answer)
            return
        }
        delayedAnswers[millisecond] = [answer]
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(millisecond * 1_000_000)) {
            let handler = loopBound.value
            let answers = handler.delayedAnswers.removeValue(forKey: millisecond) ?? []
            handler.delayed -= answers.count
            guard !handler.closing else { return }
            for answer in answers { handler.answer(answer.streamID, answer.response, goAway: answer.goAway) }
            handler.flush()
        }
    }

    private func answer(_ streamID: UInt32, _ response: EmulatedResponse, goAway: Bool) {
        if streams[streamID] != nil {
            let body = response.body
            out.writeHTTP2Headers(streamID: streamID, endStream: body == nil) { block in
                if let index = HPACKStaticIndex.status(response.status) {
                    block.writeHPACKIndexed(index)
                } else {
                    block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.status, value: String(response.status).utf8)
                }
                block.writeHPACKLiteral(name: "apns-id".utf8, value: response.apnsID.utf8)
                if let uniqueID = response.uniqueID { block.writeHPACKLiteral(name: "apns-unique-id".utf8, value: uniqueID.utf8) }
                if body != nil { block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.contentType, value: "application/json".utf8) }
            }
            if let body {
                blocked.append(BlockedData(streamID: streamID, body: body))
                writeBlockedData()
            } else {
                streams[streamID] = nil
            }
        }
        if goAway {
            settings.processor.registry.countGoAway()
            if goAwayLastStreamID == nil {
                goAwayLastStreamID = streamID
                out.writeHTTP2GoAway(lastStreamID: streamID, error: .noError, debugData: JSONValue.object(["reason": .string(APNSReason.shutdown.rawValue)]).jsonBytes)
            }
        }
        closeIfDrained()
    }

    /// Writes answer bodies the flow-control windows allow, in order.
    private func writeBlockedData() {
        while let next = blocked.first {
            guard let window = streams[next.streamID]?.sendWindow else {
                blocked.removeFirst()
                continue
            }
            guard next.body.count <= min(window, connectionSendWindow) else { return }
            blocked.removeFirst()
            connectionSendWindow -= next.body.count
            out.writeHTTP2Data(streamID: next.streamID, bytes: next.body, endStream: true)
            streams[next.streamID] = nil
        }
        closeIfDrained()
    }

    private func resetStream(_ streamID: UInt32, _ error: HTTP2ErrorCode) {
        streams[streamID] = nil
        out.writeHTTP2RSTStream(streamID: streamID, error: error)
    }

    // MARK: Output and closing

    private func flush() {
        guard let context, out.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        out = context.channel.allocator.buffer(capacity: 16_384)
    }

    /// After a GOAWAY the connection closes once every answer it still owes (for streams up to the GOAWAY's last
    /// stream id) has been written.
    private func closeIfDrained() {
        guard goAwayLastStreamID != nil, delayed == 0, blocked.isEmpty else { return }
        closeAfterFlush()
    }

    private func closeAfterFlush() {
        guard !closing, let context else { return }
        closing = true
        let channel = context.channel
        if out.readableBytes > 0 {
            context.writeAndFlush(wrapOutboundOut(out)).whenComplete { _ in channel.close(promise: nil) }
            out = context.channel.allocator.buffer(capacity: 0)
        } else {
            channel.close(promise: nil)
        }
    }

    private func fail(_ error: any Error) {
        let connectionError = error as? ConnectionError ?? ConnectionError(code: .internalError, message: "\(error)")
        out.writeHTTP2GoAway(lastStreamID: lastClientStreamID, error: connectionError.code, debugData: Array(connectionError.message.utf8))
        closeAfterFlush()
    }
}
