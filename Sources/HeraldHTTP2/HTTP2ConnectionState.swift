import DequeModule
package import NIOCore
package import NIOHPACK

/// A connection error (RFC 9113 §5.4.1): the connection ends with a GOAWAY carrying `code` and `message`.
package struct HTTP2ConnectionError: Error, Sendable, CustomStringConvertible {
    package let code: HTTP2ErrorCode
    package let message: String

    package init(_ code: HTTP2ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.name): \(message)" }
}

extension HTTP2ErrorCode {
    /// The name RFC 9113 §7 gives the code.
    package var name: String { Self.name(of: rawValue) }

    /// The name of any code on the wire, unknown ones in hex.
    package static func name(of code: UInt32) -> String {
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
}

/// The limits one endpoint holds its peer to. The defaults are NIOHTTP2's (`NIOHTTP2Handler.ConnectionConfiguration`)
/// or stricter, so a hostile peer costs this code no more than it would cost a NIOHTTP2 endpoint.
package struct HTTP2Limits: Sendable {
    /// Events allowed within a sliding window of time.
    package struct Rate: Sendable {
        package var maximumCount: Int
        package var window: TimeAmount
    }

    /// The largest decoded header list this endpoint accepts (its `SETTINGS_MAX_HEADER_LIST_SIZE`). A list over it
    /// is refused on its stream; one over four times it (at least 64 KiB) ends the connection, since decoding it
    /// all would cost what the limit is there to prevent.
    package var maxHeaderListSize = 16_384
    /// CONTINUATION frames in one header block (CVE-2024-27316 and friends): NIOHTTP2 allows 5.
    package var maxContinuationFrames = 5
    /// The encoded bytes of one header block, however many frames carry it.
    package var maxHeaderBlockBytes = 64 * 1024
    /// Empty DATA frames without END_STREAM in a row: they cost work and carry nothing.
    package var maxSequentialEmptyDataFrames = 1
    /// Control frames (acknowledgements, resets, window updates) queued while the peer does not read.
    package var maxBufferedControlFrames = 10_000
    /// RST_STREAM frames received (rapid reset, CVE-2023-44487).
    package var resets = Rate(maximumCount: 200, window: .seconds(30))
    /// PING, SETTINGS and PRIORITY frames received.
    package var controlFrames = Rate(maximumCount: 200, window: .seconds(30))
    /// Streams this endpoint had to reset because the peer broke a rule on them.
    package var streamErrors = Rate(maximumCount: 200, window: .seconds(30))
    /// The connection receive window this endpoint grants (opened with a WINDOW_UPDATE at the start).
    package var connectionReceiveWindow = HTTP2Protocol.defaultWindowSize

    package init() {}
}

/// What a frame meant, once the state machine has checked it and answered what the protocol answers by itself
/// (SETTINGS and PING acknowledgements, WINDOW_UPDATEs, stream errors).
package enum HTTP2Event {
    case none
    /// A complete header block, decoded. On a server, a new stream was opened for it.
    case headers(streamID: UInt32, headers: HPACKHeaders, endStream: Bool)
    /// A header list larger than this endpoint's limit; the stream is still open so it can be answered (431).
    case headerListTooLarge(streamID: UInt32, size: Int, limit: Int)
    case data(streamID: UInt32, payload: ByteBuffer, endStream: Bool)
    /// The peer reset the stream; it is closed.
    case streamReset(streamID: UInt32, code: UInt32)
    /// The peer broke a rule on one stream only: a RST_STREAM with `code` was written and the stream is closed.
    case streamError(streamID: UInt32, code: HTTP2ErrorCode)
    /// A server received a new stream beyond the `MAX_CONCURRENT_STREAMS` it advertised. Not opened;
    /// `lastAccepted` is the peer's stream before it, the last-stream-id a GOAWAY refusing it carries.
    case streamLimitExceeded(streamID: UInt32, lastAccepted: UInt32)
    /// The peer's SETTINGS were applied and acknowledged. `first` on its first SETTINGS frame; `windowGrew` when a
    /// larger initial window opened the streams' send windows.
    case settings(maxConcurrentStreams: Int?, first: Bool, windowGrew: Bool)
    case settingsAcknowledged
    /// Send windows grew: data waiting for window may go.
    case windowOpened
    case goAway(lastStreamID: UInt32, code: UInt32, debugData: ByteBuffer)
    case pingAcknowledged(UInt64)
}

/// One HTTP/2 connection's protocol state (RFC 9113), as a value both of Herald's endpoints drive: the sender's
/// client handler and the emulator's server handler. It checks every frame, tracks stream states and both
/// directions' flow-control windows, applies and acknowledges SETTINGS, decodes header blocks, holds the peer to
/// ``HTTP2Limits``, and maps every violation to the RST_STREAM or GOAWAY code RFC 9113 asks for. The handlers keep
/// what is theirs: requests, answers, timers, and when to close.
///
/// Answers the protocol gives by itself are written into the `out` buffer the caller passes; the caller flushes.
package struct HTTP2ConnectionState {
    package enum Role: Sendable { case client, server }

    private struct Stream {
        var sendWindow: Int
        /// Bytes received and not yet returned with a WINDOW_UPDATE.
        var receiveUnacknowledged = 0
        var localClosed: Bool
        var remoteClosed: Bool
    }

    private struct HeaderBlock {
        var streamID: UInt32
        var endStream: Bool
        var fragments: ByteBuffer
        var continuations = 0
    }

    /// Counts events in a sliding window of time (the shape of NIOHTTP2's DOS heuristics).
    private struct RateCounter {
        let rate: HTTP2Limits.Rate
        var times = Deque<NIODeadline>()

        /// Records one event; false once more than the maximum fell within the window.
        mutating func record(at time: NIODeadline?) -> Bool {
            let now = time ?? .now()
            while let first = times.first, now - first > rate.window { times.removeFirst() }
            times.append(now)
            return times.count <= rate.maximumCount
        }
    }

    package let role: Role
    package let limits: HTTP2Limits
    private var decoder: HPACKDecoder
    private var streams: [UInt32: Stream] = [:]
    private var pendingHeaders: HeaderBlock?

    private var settingsReceived = false
    /// SETTINGS this side sent and the peer has not acknowledged yet, oldest first.
    private var unacknowledgedSettings = Deque<[(HTTP2SettingID, Int)]>()
    /// This side's `MAX_CONCURRENT_STREAMS` once the peer acknowledged it (no limit before: RFC 9113 §6.5.3).
    package private(set) var localMaxConcurrentStreams = Int.max

    package private(set) var peerMaxFrameSize = HTTP2Protocol.minMaxFrameSize
    package private(set) var peerInitialWindowSize = HTTP2Protocol.defaultWindowSize
    package private(set) var connectionSendWindow = HTTP2Protocol.defaultWindowSize
    private var connectionReceiveUnacknowledged = 0

    /// The highest stream id the peer opened (server) or this side opened (client).
    package private(set) var lastPeerStreamID: UInt32 = 0
    package private(set) var nextLocalStreamID: UInt32
    /// The last-stream-id of the GOAWAY this side sent: later peer streams are ignored.
    package private(set) var sentGoAwayLastStreamID: UInt32?
    /// The lowest last-stream-id of the GOAWAYs the peer sent.
    package private(set) var receivedGoAwayLastStreamID: UInt32?

    private var emptyDataFrames = 0
    private var bufferedControlFrames = 0
    private var resets: RateCounter
    private var controlFrames: RateCounter
    private var streamErrors: RateCounter

    /// Whether the channel takes writes: control frames written while it does not are counted against
    /// ``HTTP2Limits/maxBufferedControlFrames``.
    package var outputWritable = true {
        didSet { if outputWritable { bufferedControlFrames = 0 } }
    }

    package init(role: Role, limits: HTTP2Limits = HTTP2Limits(), firstLocalStreamID: UInt32? = nil) {
        self.role = role
        self.limits = limits
        self.nextLocalStreamID = firstLocalStreamID ?? (role == .client ? 1 : 2)
        let hardLimit = max(4 * limits.maxHeaderListSize, 64 * 1024)
        decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4096,
                               maxHeaderListSize: hardLimit)
        resets = RateCounter(rate: limits.resets)
        controlFrames = RateCounter(rate: limits.controlFrames)
        streamErrors = RateCounter(rate: limits.streamErrors)
    }

    /// Streams open in either direction.
    package var openStreams: Int { streams.count }

    package func isOpen(_ streamID: UInt32) -> Bool { streams[streamID] != nil }

    // MARK: This side's output

    /// The start of the connection: the client preface (client), this side's SETTINGS, and a WINDOW_UPDATE when the
    /// connection receive window is larger than the default.
    package mutating func start(settings: [(HTTP2SettingID, Int)], into out: inout ByteBuffer) {
        if role == .client { out.writeBytes(HTTP2Protocol.clientPreface) }
        advertise(settings, into: &out)
        let extra = limits.connectionReceiveWindow - HTTP2Protocol.defaultWindowSize
        if extra > 0 { out.writeHTTP2WindowUpdate(streamID: 0, increment: extra) }
    }

    /// Sends SETTINGS; each applies once the peer acknowledges it.
    package mutating func advertise(_ settings: [(HTTP2SettingID, Int)], into out: inout ByteBuffer) {
        out.writeHTTP2Settings(settings)
        unacknowledgedSettings.append(settings)
    }

    /// A client opens its next stream (headers written by the caller). Nil once stream ids ran out (RFC 9113 §5.1.1).
    package mutating func openLocalStream(endStream: Bool) -> UInt32? {
        guard nextLocalStreamID <= 0x7FFF_FFFF else { return nil }
        let streamID = nextLocalStreamID
        nextLocalStreamID += 2
        streams[streamID] = Stream(sendWindow: peerInitialWindowSize, localClosed: endStream, remoteClosed: false)
        return streamID
    }

    /// This side wrote HEADERS on an open stream (an answer); with END_STREAM its side of the stream closes.
    package mutating func sentHeaders(streamID: UInt32, endStream: Bool) {
        if endStream { closeLocal(streamID) }
    }

    /// Reserves up to `wanted` bytes of DATA for the stream: at most what both send windows and the peer's frame
    /// size allow, possibly 0. The caller writes a frame of exactly the returned length.
    package mutating func reserveSendWindow(streamID: UInt32, wanted: Int) -> Int {
        guard let window = streams[streamID]?.sendWindow else { return 0 }
        let length = max(0, min(wanted, window, connectionSendWindow, peerMaxFrameSize))
        streams[streamID]!.sendWindow -= length
        connectionSendWindow -= length
        return length
    }

    /// Bytes the stream could send now (one frame's worth at most).
    package func sendWindow(streamID: UInt32) -> Int {
        guard let window = streams[streamID]?.sendWindow else { return 0 }
        return max(0, min(window, connectionSendWindow, peerMaxFrameSize))
    }

    /// This side wrote END_STREAM on DATA.
    package mutating func sentEndStream(streamID: UInt32) {
        closeLocal(streamID)
    }

    /// Ends a stream with RST_STREAM. `peerFault` when the peer broke a rule on it (counted against
    /// ``HTTP2Limits/streamErrors``); not for this side's own cancellations.
    package mutating func resetStream(_ streamID: UInt32, code: HTTP2ErrorCode, peerFault: Bool = false,
                                      now: NIODeadline? = nil, into out: inout ByteBuffer) throws(HTTP2ConnectionError) {
        streams[streamID] = nil
        writeControl(into: &out) { $0.writeHTTP2RSTStream(streamID: streamID, error: code) }
        if peerFault { try checkStreamErrorRate(now: now) }
        try checkBufferedControlFrames()
    }

    /// Forgets a stream without a frame (the peer closed it, or this side gives up on it silently).
    package mutating func forgetStream(_ streamID: UInt32) {
        streams[streamID] = nil
    }

    /// Sends GOAWAY: the peer's streams above `lastStreamID` (default: the last it opened) will be ignored.
    package mutating func goAway(lastStreamID: UInt32? = nil, code: HTTP2ErrorCode, debugData: [UInt8] = [], into out: inout ByteBuffer) {
        let last = lastStreamID ?? (role == .server ? lastPeerStreamID : 0)
        sentGoAwayLastStreamID = min(last, sentGoAwayLastStreamID ?? last)
        out.writeHTTP2GoAway(lastStreamID: last, error: code, debugData: debugData)
    }

    /// Sends a PING this side expects acknowledged.
    package mutating func ping(_ opaque: UInt64, into out: inout ByteBuffer) {
        out.writeHTTP2Ping(opaque, ack: false)
    }

    // MARK: Input

    /// Checks one frame and applies it. Throws the connection error that must end the connection.
    package mutating func receive(_ frame: HTTP2Frame, now: NIODeadline? = nil, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        if let pending = pendingHeaders {
            guard frame.type == HTTP2FrameType.continuation.rawValue, frame.streamID == pending.streamID else {
                throw HTTP2ConnectionError(.protocolError, "a header block for stream \(pending.streamID) was interrupted by another frame (RFC 9113 §6.10)")
            }
            return try receiveContinuation(frame, now: now, into: &out)
        }
        guard settingsReceived || frame.type == HTTP2FrameType.settings.rawValue && !frame.has(HTTP2Flags.ack) else {
            throw HTTP2ConnectionError(.protocolError, "the first frame must be SETTINGS (RFC 9113 §3.4)")
        }
        if frame.type != HTTP2FrameType.data.rawValue { emptyDataFrames = 0 }
        switch frame.knownType {
        case .data: return try receiveData(frame, now: now, into: &out)
        case .headers: return try receiveHeaders(frame, now: now, into: &out)
        case .continuation:
            throw HTTP2ConnectionError(.protocolError, "CONTINUATION without a header block to continue")
        case .settings: return try receiveSettings(frame, now: now, into: &out)
        case .ping: return try receivePing(frame, now: now, into: &out)
        case .windowUpdate: return try receiveWindowUpdate(frame, now: now, into: &out)
        case .rstStream: return try receiveReset(frame, now: now)
        case .goAway: return try receiveGoAway(frame)
        case .priority:
            guard frame.streamID != 0 else { throw HTTP2ConnectionError(.protocolError, "PRIORITY on stream 0") }
            try checkControlFrameRate(now: now)
            guard frame.payload.readableBytes == 5 else {
                try resetStream(frame.streamID, code: .frameSizeError, peerFault: true, now: now, into: &out)
                return .streamError(streamID: frame.streamID, code: .frameSizeError)
            }
            return .none
        case .pushPromise:
            throw HTTP2ConnectionError(.protocolError, role == .server
                ? "clients must not send PUSH_PROMISE (RFC 9113 §8.4)"
                : "PUSH_PROMISE although this client disabled server push")
        case nil:
            return .none  // Unknown frame types are ignored (RFC 9113 §4.1).
        }
    }

    private mutating func receiveSettings(_ frame: HTTP2Frame, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS on stream \(frame.streamID)") }
        try checkControlFrameRate(now: now)
        if frame.has(HTTP2Flags.ack) {
            guard frame.payload.readableBytes == 0 else { throw HTTP2ConnectionError(.frameSizeError, "a SETTINGS acknowledgement with a payload") }
            guard let settings = unacknowledgedSettings.popFirst() else {
                throw HTTP2ConnectionError(.protocolError, "a SETTINGS acknowledgement for no SETTINGS")
            }
            for (id, value) in settings where id == .maxConcurrentStreams { localMaxConcurrentStreams = value }
            return .settingsAcknowledged
        }
        guard frame.payload.readableBytes % 6 == 0 else {
            throw HTTP2ConnectionError(.frameSizeError, "a SETTINGS frame of \(frame.payload.readableBytes) bytes, not a multiple of 6")
        }
        var payload = frame.payload
        var streamLimit: Int?
        var windowGrew = false
        while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            switch HTTP2SettingID(rawValue: id) {
            case .headerTableSize:
                headerTableSize = Int(value)
            case .enablePush:
                guard value <= 1 else { throw HTTP2ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH of \(value); only 0 and 1 exist") }
                guard role == .server || value == 0 else {
                    throw HTTP2ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH=1 from a server (RFC 9113 §6.5.2)")
                }
            case .maxConcurrentStreams:
                streamLimit = Int(value)
            case .initialWindowSize:
                guard value <= UInt32(HTTP2Protocol.maxWindowSize) else {
                    throw HTTP2ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value), above 2^31-1")
                }
                // Open streams' windows move by the difference, and none may pass 2^31-1 (RFC 9113 §6.9.2).
                let delta = Int(value) - peerInitialWindowSize
                if delta > 0, streams.values.contains(where: { $0.sendWindow + delta > HTTP2Protocol.maxWindowSize }) {
                    throw HTTP2ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value) takes a stream window above 2^31-1")
                }
                peerInitialWindowSize = Int(value)
                if delta != 0 {
                    for key in streams.keys { streams[key]!.sendWindow += delta }
                    windowGrew = windowGrew || delta > 0
                }
            case .maxFrameSize:
                guard (HTTP2Protocol.minMaxFrameSize...HTTP2Protocol.maxMaxFrameSize).contains(Int(value)) else {
                    throw HTTP2ConnectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE of \(value), outside 16,384...16,777,215")
                }
                peerMaxFrameSize = Int(value)
            case .maxHeaderListSize, nil:
                break  // Advisory, and unknown settings are ignored (RFC 9113 §6.5.2).
            }
        }
        writeControl(into: &out) { $0.writeHTTP2SettingsAck() }
        try checkBufferedControlFrames()
        let first = !settingsReceived
        settingsReceived = true
        return .settings(maxConcurrentStreams: streamLimit, first: first, windowGrew: windowGrew)
    }

    /// The peer's `SETTINGS_HEADER_TABLE_SIZE`: what an encoder of this side's header blocks may use.
    package private(set) var headerTableSize = 4096

    private mutating func receivePing(_ frame: HTTP2Frame, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "PING on stream \(frame.streamID)") }
        guard let opaque = frame.pingData else { throw HTTP2ConnectionError(.frameSizeError, "a PING of \(frame.payload.readableBytes) bytes, not 8") }
        if frame.has(HTTP2Flags.ack) { return .pingAcknowledged(opaque) }
        try checkControlFrameRate(now: now)
        writeControl(into: &out) { $0.writeHTTP2Ping(opaque, ack: true) }
        try checkBufferedControlFrames()
        return .none
    }

    private mutating func receiveWindowUpdate(_ frame: HTTP2Frame, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard let increment = frame.windowIncrement else {
            throw HTTP2ConnectionError(.frameSizeError, "a WINDOW_UPDATE of \(frame.payload.readableBytes) bytes, not 4")
        }
        if frame.streamID == 0 {
            guard increment > 0 else { throw HTTP2ConnectionError(.protocolError, "a connection WINDOW_UPDATE of 0 (RFC 9113 §6.9)") }
            guard connectionSendWindow + increment <= HTTP2Protocol.maxWindowSize else {
                throw HTTP2ConnectionError(.flowControlError, "a WINDOW_UPDATE that takes the connection window above 2^31-1")
            }
            connectionSendWindow += increment
            return .windowOpened
        }
        guard let stream = streams[frame.streamID] else {
            try checkNotIdle(frame.streamID, "WINDOW_UPDATE")
            return .none  // closed: a late update is harmless
        }
        guard increment > 0 else {
            try resetStream(frame.streamID, code: .protocolError, peerFault: true, now: now, into: &out)
            return .streamError(streamID: frame.streamID, code: .protocolError)
        }
        guard stream.sendWindow + increment <= HTTP2Protocol.maxWindowSize else {
            try resetStream(frame.streamID, code: .flowControlError, peerFault: true, now: now, into: &out)
            return .streamError(streamID: frame.streamID, code: .flowControlError)
        }
        streams[frame.streamID]!.sendWindow += increment
        return .windowOpened
    }

    private mutating func receiveReset(_ frame: HTTP2Frame, now: NIODeadline?) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard frame.streamID != 0 else { throw HTTP2ConnectionError(.protocolError, "RST_STREAM on stream 0") }
        guard let code = frame.resetCode else {
            throw HTTP2ConnectionError(.frameSizeError, "a RST_STREAM of \(frame.payload.readableBytes) bytes, not 4")
        }
        try checkNotIdle(frame.streamID, "RST_STREAM")
        guard resets.record(at: now) else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.resets.maximumCount) RST_STREAM frames in \(limits.resets.window.nanoseconds / 1_000_000_000) s (rapid reset)")
        }
        streams[frame.streamID] = nil
        return .streamReset(streamID: frame.streamID, code: code)
    }

    private mutating func receiveGoAway(_ frame: HTTP2Frame) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard frame.streamID == 0 else { throw HTTP2ConnectionError(.protocolError, "GOAWAY on stream \(frame.streamID)") }
        guard frame.payload.readableBytes >= 8 else {
            throw HTTP2ConnectionError(.frameSizeError, "a GOAWAY of \(frame.payload.readableBytes) bytes, under 8")
        }
        var payload = frame.payload
        let lastStreamID = payload.readInteger(as: UInt32.self)! & 0x7FFF_FFFF
        let code = payload.readInteger(as: UInt32.self)!
        receivedGoAwayLastStreamID = min(lastStreamID, receivedGoAwayLastStreamID ?? lastStreamID)
        return .goAway(lastStreamID: lastStreamID, code: code, debugData: payload)
    }

    private mutating func receiveData(_ frame: HTTP2Frame, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard frame.streamID != 0 else { throw HTTP2ConnectionError(.protocolError, "DATA on stream 0") }
        // The whole payload, padding included, counts against both windows whatever happens to the stream (§6.9.1).
        let length = frame.payload.readableBytes
        connectionReceiveUnacknowledged += length
        guard connectionReceiveUnacknowledged <= limits.connectionReceiveWindow else {
            throw HTTP2ConnectionError(.flowControlError, "DATA beyond the connection's flow-control window")
        }
        if connectionReceiveUnacknowledged >= limits.connectionReceiveWindow / 2 {
            let increment = connectionReceiveUnacknowledged
            connectionReceiveUnacknowledged = 0
            writeControl(into: &out) { $0.writeHTTP2WindowUpdate(streamID: 0, increment: increment) }
        }
        guard let payload = frame.unpaddedPayload() else { throw HTTP2ConnectionError(.protocolError, "DATA whose padding exceeds the frame") }
        let endStream = frame.has(HTTP2Flags.endStream)
        if payload.readableBytes == 0, !endStream {
            emptyDataFrames += 1
            guard emptyDataFrames <= limits.maxSequentialEmptyDataFrames else {
                throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.maxSequentialEmptyDataFrames) empty DATA frames in a row")
            }
        } else {
            emptyDataFrames = 0
        }
        guard var stream = streams[frame.streamID] else {
            try checkNotIdle(frame.streamID, "DATA")
            if role == .client { return .none }  // a stream this side gave up on: late data only counted for the connection
            try resetStream(frame.streamID, code: .streamClosed, peerFault: true, now: now, into: &out)
            return .streamError(streamID: frame.streamID, code: .streamClosed)
        }
        guard !stream.remoteClosed else {
            try resetStream(frame.streamID, code: .streamClosed, peerFault: true, now: now, into: &out)
            return .streamError(streamID: frame.streamID, code: .streamClosed)
        }
        stream.receiveUnacknowledged += length
        guard stream.receiveUnacknowledged <= HTTP2Protocol.defaultWindowSize else {
            throw HTTP2ConnectionError(.flowControlError, "DATA beyond stream \(frame.streamID)'s flow-control window")
        }
        if endStream {
            stream.remoteClosed = true
            stream.receiveUnacknowledged = 0  // the stream is closing; no update needed
        } else if stream.receiveUnacknowledged >= HTTP2Protocol.defaultWindowSize / 2 {
            let increment = stream.receiveUnacknowledged
            stream.receiveUnacknowledged = 0
            writeControl(into: &out) { $0.writeHTTP2WindowUpdate(streamID: frame.streamID, increment: increment) }
        }
        store(stream, frame.streamID)
        return .data(streamID: frame.streamID, payload: payload, endStream: endStream)
    }

    private mutating func receiveHeaders(_ frame: HTTP2Frame, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        guard frame.streamID != 0 else { throw HTTP2ConnectionError(.protocolError, "HEADERS on stream 0") }
        guard let fragment = frame.unpaddedPayload() else { throw HTTP2ConnectionError(.protocolError, "HEADERS whose padding exceeds the frame") }
        emptyDataFrames = 0
        let block = HeaderBlock(streamID: frame.streamID, endStream: frame.has(HTTP2Flags.endStream), fragments: fragment)
        guard frame.has(HTTP2Flags.endHeaders) else {
            try checkBlockSize(block)
            pendingHeaders = block
            return .none
        }
        return try receiveHeaderBlock(block, now: now, into: &out)
    }

    private mutating func receiveContinuation(_ frame: HTTP2Frame, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        var block = pendingHeaders!
        block.continuations += 1
        guard block.continuations <= limits.maxContinuationFrames else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.maxContinuationFrames) CONTINUATION frames in one header block")
        }
        var fragment = frame.payload
        block.fragments.writeBuffer(&fragment)
        try checkBlockSize(block)
        guard frame.has(HTTP2Flags.endHeaders) else {
            pendingHeaders = block
            return .none
        }
        pendingHeaders = nil
        return try receiveHeaderBlock(block, now: now, into: &out)
    }

    private func checkBlockSize(_ block: HeaderBlock) throws(HTTP2ConnectionError) {
        guard block.fragments.readableBytes <= limits.maxHeaderBlockBytes else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "header list too large: a header block over \(limits.maxHeaderBlockBytes) bytes")
        }
    }

    private mutating func receiveHeaderBlock(_ block: HeaderBlock, now: NIODeadline?, into out: inout ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Event {
        // Every block is decoded, even for streams that are ignored: the HPACK table is shared by the connection.
        var fragments = block.fragments
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &fragments)
        } catch is NIOHPACKErrors.MaxHeaderListSizeViolation {
            throw HTTP2ConnectionError(.enhanceYourCalm, "header list too large: over \(decoder.maxHeaderListSize) bytes, far above the \(limits.maxHeaderListSize) bytes allowed")
        } catch {
            throw HTTP2ConnectionError(.compressionError, "a header block that is not valid HPACK (\(error))")
        }
        let id = block.streamID
        if var stream = streams[id] {
            guard !stream.remoteClosed else {
                try resetStream(id, code: .streamClosed, peerFault: true, now: now, into: &out)
                return .streamError(streamID: id, code: .streamClosed)
            }
            if block.endStream {
                stream.remoteClosed = true
                store(stream, id)
            }
            return .headers(streamID: id, headers: headers, endStream: block.endStream)
        }
        switch role {
        case .client:
            guard id % 2 == 1 else { throw HTTP2ConnectionError(.protocolError, "HEADERS on server stream \(id) although push is disabled") }
            try checkNotIdle(id, "HEADERS")
            return .none  // a stream this side gave up on
        case .server:
            guard id % 2 == 1 else { throw HTTP2ConnectionError(.protocolError, "HEADERS on even stream \(id): client streams are odd (RFC 9113 §5.1.1)") }
            guard id > lastPeerStreamID else {
                throw HTTP2ConnectionError(.protocolError, "HEADERS on stream \(id), not above the last stream \(lastPeerStreamID) (RFC 9113 §5.1.1)")
            }
            let previous = lastPeerStreamID
            lastPeerStreamID = id
            if let last = sentGoAwayLastStreamID, id > last { return .none }  // after this side's GOAWAY: not processed
            guard streams.count < localMaxConcurrentStreams else {
                return .streamLimitExceeded(streamID: id, lastAccepted: previous)
            }
            streams[id] = Stream(sendWindow: peerInitialWindowSize, localClosed: false, remoteClosed: block.endStream)
            let size = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 }
            if size > limits.maxHeaderListSize { return .headerListTooLarge(streamID: id, size: size, limit: limits.maxHeaderListSize) }
            return .headers(streamID: id, headers: headers, endStream: block.endStream)
        }
    }

    // MARK: Helpers

    /// Frames on a stream that was never opened are a connection error (RFC 9113 §5.1, idle state).
    private func checkNotIdle(_ streamID: UInt32, _ frameName: String) throws(HTTP2ConnectionError) {
        let idle = switch role {
        case .server: streamID % 2 == 1 ? streamID > lastPeerStreamID : streamID >= nextLocalStreamID
        case .client: streamID % 2 == 1 ? streamID >= nextLocalStreamID : true
        }
        if idle { throw HTTP2ConnectionError(.protocolError, "\(frameName) on idle stream \(streamID)") }
    }

    private mutating func store(_ stream: Stream, _ streamID: UInt32) {
        if stream.localClosed, stream.remoteClosed { streams[streamID] = nil } else { streams[streamID] = stream }
    }

    private mutating func closeLocal(_ streamID: UInt32) {
        guard var stream = streams[streamID] else { return }
        stream.localClosed = true
        store(stream, streamID)
    }

    private mutating func writeControl(into out: inout ByteBuffer, _ write: (inout ByteBuffer) -> Void) {
        write(&out)
        if !outputWritable { bufferedControlFrames += 1 }
    }

    private func checkBufferedControlFrames() throws(HTTP2ConnectionError) {
        guard bufferedControlFrames <= limits.maxBufferedControlFrames else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.maxBufferedControlFrames) control frames to answer while the peer does not read")
        }
    }

    private mutating func checkControlFrameRate(now: NIODeadline?) throws(HTTP2ConnectionError) {
        guard controlFrames.record(at: now) else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.controlFrames.maximumCount) PING, SETTINGS and PRIORITY frames in \(limits.controlFrames.window.nanoseconds / 1_000_000_000) s")
        }
    }

    private mutating func checkStreamErrorRate(now: NIODeadline?) throws(HTTP2ConnectionError) {
        guard streamErrors.record(at: now) else {
            throw HTTP2ConnectionError(.enhanceYourCalm, "more than \(limits.streamErrors.maximumCount) streams broke the protocol in \(limits.streamErrors.window.nanoseconds / 1_000_000_000) s")
        }
    }
}
