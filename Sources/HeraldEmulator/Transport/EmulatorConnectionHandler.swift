import DequeModule
import HeraldCore
import HeraldHTTP2
import NIOCore
import NIOHPACK

/// Serves APNs' side of one HTTP/2 connection: frames in, requests checked by the ``RequestProcessor``, answers out.
///
/// It works on the byte stream (after TLS) with Herald's framing layer rather than a general HTTP/2 server: APNs
/// traffic is one small request and one small answer per stream, and a child channel with its own pipeline per
/// stream cost more than the checks themselves. The protocol (stream states, SETTINGS, windows, limits, error codes)
/// is ``HTTP2ConnectionState``, the same value the sender's handler drives. Everything runs on the connection's event
/// loop; answers given during one read are written together and flushed once when the read ends.
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
        /// Set once the request went to the processor: later frames for it are a protocol error or ignored.
        var answering = false
    }

    /// An answer body that has to wait for the client to open the flow-control window.
    private struct BlockedData {
        var streamID: UInt32
        var body: [UInt8]
        /// How much of `body` is written.
        var sent = 0
    }

    private struct DelayedAnswer {
        var streamID: UInt32
        var response: EmulatedResponse
        var goAway: Bool
    }

    /// The largest request body kept: bigger ones are only counted, to answer `PayloadTooLarge` without storing them.
    private static let bodyCap = APNSPushType.voip.maximumPayloadSize + 1
    /// The limits clients are held to: NIOHTTP2's defaults, APNs' header list size, and a connection receive window
    /// large enough that a thousand concurrent requests never wait for an update.
    private static let limits: HTTP2Limits = {
        var limits = HTTP2Limits()
        limits.maxHeaderListSize = 8000
        limits.connectionReceiveWindow = 1 << 24
        return limits
    }()
    private static let goAwayReason = #"{"reason":"Maximum active streams violated for this endpoint."}"#

    private let settings: Settings
    private var authentication: ConnectionAuthentication
    private var ids = IDGenerator()
    private var reader = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.minMaxFrameSize)
    private var state = HTTP2ConnectionState(role: .server, limits: EmulatorConnectionHandler.limits)
    private var out = ByteBuffer()
    private var context: ChannelHandlerContext?

    private var prefaceReceived = false
    private var streams: [UInt32: Stream] = [:]
    private var blocked = Deque<BlockedData>()
    private var streamLimitRaised = false

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
        streamLimitRaised = settings.initialStreams > 1
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        out = context.channel.allocator.buffer(capacity: 16_384)
        // APNs' initial SETTINGS (apns-protocol.md §10): one stream until a request proves its credential.
        state.start(settings: [
            (.headerTableSize, 4096), (.maxConcurrentStreams, settings.initialStreams),
            (.maxFrameSize, HTTP2Protocol.minMaxFrameSize), (.maxHeaderListSize, Self.limits.maxHeaderListSize),
        ], into: &out)
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
                    throw HTTP2ConnectionError(.protocolError, "Expected the HTTP/2 connection preface.")
                }
                prefaceReceived = true
            }
            while !closing, let frame = try nextFrame() {
                try handle(state.receive(frame, into: &out))
            }
        } catch {
            fail(error)
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

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS and socket errors end the connection; there is no one to answer.
        closing = true
        context.close(promise: nil)
    }

    private func nextFrame() throws -> HTTP2Frame? {
        do {
            return try reader.nextFrame()
        } catch {
            throw HTTP2ConnectionError(.frameSizeError, "A \(error.length)-byte frame exceeds SETTINGS_MAX_FRAME_SIZE.")
        }
    }

    // MARK: Frames

    private func handle(_ event: HTTP2Event) throws {
        switch event {
        case .none, .settingsAcknowledged, .pingAcknowledged, .goAway:
            break
        case .headers(let streamID, let headers, let endStream):
            try receiveHeaders(streamID: streamID, headers: headers, endStream: endStream)
        case .headerListTooLarge(let streamID, let size, let limit):
            // RFC 9113 §10.5.1: a server may answer 431. APNs documents nothing; the reason says what to fix.
            streams[streamID] = Stream(answering: true)
            let reason = "Header list too large: \(size) bytes, above the \(limit) bytes of SETTINGS_MAX_HEADER_LIST_SIZE."
            writeAnswer(streamID, status: 431, apnsID: ids.next(), uniqueID: nil, body: JSONValue.object(["reason": .string(reason)]).jsonBytes)
            closeIfDrained()
        case .data(let streamID, let payload, let endStream):
            guard var stream = streams[streamID], !stream.answering else { return }
            let room = max(0, Self.bodyCap - stream.body.count)
            stream.body.append(contentsOf: payload.readableBytesView.prefix(room))
            stream.bodyLength += payload.readableBytes
            streams[streamID] = stream
            if endStream { complete(streamID) }
        case .streamReset(let streamID, _):
            // The client gave up on the stream (a cancelled request, a timeout): it wants no answer.
            settings.processor.registry.countClientReset()
            streams[streamID] = nil
            blocked.removeAll { $0.streamID == streamID }
            closeIfDrained()
        case .streamError(let streamID, _):
            streams[streamID] = nil
            blocked.removeAll { $0.streamID == streamID }
            closeIfDrained()
        case .streamLimitExceeded(_, let last):
            // More streams than advertised: APNs refuses the connection with these words. The streams up to
            // last-stream-id were accepted, so they are answered before the connection closes (RFC 9113 §6.8);
            // the sender knows the others were never processed.
            if goAwayLastStreamID == nil {
                state.goAway(lastStreamID: last, code: .enhanceYourCalm, debugData: Array(Self.goAwayReason.utf8), into: &out)
                goAwayLastStreamID = last
            }
            closeIfDrained()
        case .settings, .windowOpened:
            writeBlockedData()
        }
    }

    private func receiveHeaders(streamID id: UInt32, headers: HPACKHeaders, endStream: Bool) throws {
        if streams[id] != nil {
            // Trailers: they must end the stream.
            guard endStream else { return try resetStream(id, .protocolError) }
            return complete(id)
        }
        var stream = Stream()
        guard Self.read(headers, into: &stream) else { return try resetStream(id, .protocolError) }
        streams[id] = stream
        if endStream { complete(id) }
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
        if let length = stream.contentLength, length != stream.bodyLength {
            // A peer fault on one stream; the rate of such resets is bounded by the state machine.
            do { return try resetStream(streamID, .protocolError) } catch { return fail(error) }
        }
        stream.answering = true
        let request = EmulatedRequest(method: stream.method, path: stream.path, headers: stream.headers, body: stream.body)
        stream.headers = []
        stream.body = []
        streams[streamID] = stream

        let response = settings.processor.process(request, connection: &authentication, now: settings.clock.now(), ids: &ids)
        if authentication.hasValidatedRequest, !streamLimitRaised {
            streamLimitRaised = true
            state.advertise([(.maxConcurrentStreams, settings.maxConcurrentStreams)], into: &out)
        }
        streamsServed += 1
        let faults = settings.faults.configuration
        if let closeAfter = faults.closeAfterStreams, streamsServed >= closeAfter {
            // Processed (delivered when valid) and never answered: the connection dies without a GOAWAY. The answers
            // already given go out first; the streams not yet read get none.
            settings.processor.registry.countFault("closeAfterStreams")
            closeAfterFlush()
            return
        }

        switch response.fault {
        case .reset:
            // The answers already given go out first; this stream, and the ones not yet read, get none.
            closeAfterFlush()
            return
        case .noResponse:
            return  // The stream stays open (and counts against the limit) until the client gives up.
        case .refuseStream:
            // Not processed (nothing was delivered): the client may send it again on another stream.
            do { return try resetStream(streamID, .refusedStream, peerFault: false) } catch { return fail(error) }
        default:
            break
        }
        let goAway = response.fault == .goAway || faults.goAwayAfterStreams.map { streamsServed >= $0 } ?? false
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
            writeAnswer(
                streamID, status: response.status, apnsID: response.apnsID, uniqueID: response.uniqueID, body: response.body,
                isChannelRequest: response.isChannelRequest, channelID: response.channelID)
        }
        if goAway {
            settings.processor.registry.countGoAway()
            if goAwayLastStreamID == nil {
                // last-stream-id promises that nothing above it was processed, so it covers every stream whose
                // request was already handled (delivered, its answer held back by latency), not only this one.
                let last = streams.filter(\.value.answering).keys.reduce(streamID, max)
                goAwayLastStreamID = last
                state.goAway(lastStreamID: last, code: .noError, debugData: JSONValue.object(["reason": .string(APNSReason.shutdown.rawValue)]).jsonBytes, into: &out)
                // Streams above it are left unprocessed: the client sends them again elsewhere.
                for id in streams.keys where id > last { streams[id] = nil }
                blocked.removeAll { $0.streamID > last }
            }
        }
        closeIfDrained()
    }

    private func writeAnswer(
        _ streamID: UInt32, status: Int, apnsID: String, uniqueID: String?, body: [UInt8]?, isChannelRequest: Bool = false,
        channelID: String? = nil
    ) {
        out.writeHTTP2Headers(streamID: streamID, endStream: body == nil) { block in
            if let index = HPACKStaticIndex.status(status) {
                block.writeHPACKIndexed(index)
            } else {
                block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.status, value: String(status).utf8)
            }
            // Broadcast and channel-management answers carry apns-request-id instead (apns-protocol.md §5.5).
            block.writeHPACKLiteral(name: (isChannelRequest ? "apns-request-id" : "apns-id").utf8, value: apnsID.utf8)
            if let channelID { block.writeHPACKLiteral(name: "apns-channel-id".utf8, value: channelID.utf8) }
            if let uniqueID { block.writeHPACKLiteral(name: "apns-unique-id".utf8, value: uniqueID.utf8) }
            if body != nil { block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.contentType, value: "application/json".utf8) }
        }
        state.sentHeaders(streamID: streamID, endStream: body == nil)
        if let body {
            blocked.append(BlockedData(streamID: streamID, body: body))
            writeBlockedData()
        } else {
            streams[streamID] = nil
        }
    }

    /// Writes answer bodies in frames as large as the flow-control windows allow, oldest first. A stream whose own
    /// window is shut does not hold back the ones after it; only the connection window stops them all.
    private func writeBlockedData() {
        var index = blocked.startIndex
        while index < blocked.endIndex, state.connectionSendWindow > 0 {
            let streamID = blocked[index].streamID
            guard streams[streamID] != nil, state.isOpen(streamID) else {
                blocked.remove(at: index)
                continue
            }
            var entry = blocked[index]
            while entry.sent < entry.body.count {
                let length = state.reserveSendWindow(streamID: streamID, wanted: entry.body.count - entry.sent)
                guard length > 0 else { break }
                let end = entry.sent + length
                out.writeHTTP2Data(streamID: streamID, bytes: entry.body[entry.sent..<end], endStream: end == entry.body.count)
                entry.sent = end
            }
            if entry.sent == entry.body.count {
                state.sentEndStream(streamID: streamID)
                streams[streamID] = nil
                blocked.remove(at: index)
            } else {
                blocked[index] = entry
                index += 1
            }
        }
        closeIfDrained()
    }

    private func resetStream(_ streamID: UInt32, _ error: HTTP2ErrorCode, peerFault: Bool = true) throws {
        streams[streamID] = nil
        try state.resetStream(streamID, code: error, peerFault: peerFault, into: &out)
        closeIfDrained()
    }

    // MARK: Output and closing

    private func flush() {
        guard let context, out.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        out = context.channel.allocator.buffer(capacity: 16_384)
    }

    /// After a GOAWAY the connection closes once every answer it still owes (for streams up to the GOAWAY's last
    /// stream id) has been written: requests still arriving, answers waiting for their latency or for window.
    /// Streams the `noResponse` fault keeps open owe nothing.
    private func closeIfDrained() {
        guard goAwayLastStreamID != nil, delayed == 0, blocked.isEmpty, streams.values.allSatisfy(\.answering) else { return }
        closeAfterFlush(lingering: true)
    }

    /// How long a connection that said GOAWAY waits for the client to close it once every answer is written.
    static let linger = TimeAmount.seconds(1)

    /// Writes what is left, then closes; `lingering`, it first waits (reading and dropping what arrives) for the client
    /// to close, at most ``linger``. Closing while the client's requests above last-stream-id are still arriving
    /// would leave them unread, and the kernel then resets the connection: the client may lose answers it had not yet
    /// read, and send those notifications again. APNs's graceful GOAWAY leaves the close to the client too.
    private func closeAfterFlush(lingering: Bool = false) {
        guard !closing, let context else { return }
        closing = true
        let channel = context.channel
        let close: @Sendable () -> Void = {
            if lingering {
                channel.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
        if out.readableBytes > 0 {
            context.writeAndFlush(wrapOutboundOut(out)).whenComplete { _ in close() }
            out = context.channel.allocator.buffer(capacity: 0)
        } else {
            close()
        }
    }

    private func fail(_ error: any Error) {
        let connectionError = error as? HTTP2ConnectionError ?? HTTP2ConnectionError(.internalError, "\(error)")
        state.goAway(code: connectionError.code, debugData: Array(connectionError.message.utf8), into: &out)
        closeAfterFlush()
    }
}
