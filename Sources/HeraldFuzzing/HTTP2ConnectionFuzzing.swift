import HeraldHTTP2
import NIOCore

/// Drives the connection state machine both of Herald's endpoints use with frames from the input, as the emulator
/// (server) or the sender (client) would, answering what they would answer.
enum HTTP2ConnectionFuzzing {
    /// Bytes a single received frame may make this side write by itself: a SETTINGS or PING acknowledgement, a
    /// RST_STREAM, and WINDOW_UPDATEs for the stream and the connection. More would let a peer amplify its traffic.
    private static let maximumAnswerPerFrame = 64
    private static let maximumWindow = Int(Int32.max)

    static func check(_ input: [UInt8]) -> FuzzFinding? {
        var reader = FuzzInput(input)
        let control = reader.byte()
        let role: HTTP2ConnectionState.Role = control & 1 == 0 ? .server : .client
        var state = HTTP2ConnectionState(role: role)
        var out = ByteBuffer()
        state.start(settings: [(.maxConcurrentStreams, 8), (.initialWindowSize, 1 << 16)], into: &out)
        if role == .client {
            for _ in 0..<Int(control >> 1 & 3) {
                _ = state.openLocalStream(endStream: control & 0x10 == 0)
            }
        }
        let wire = reader.rest()
        var frames = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.minMaxFrameSize)
        // A server reads the client preface before any frame; a client's peer sends none.
        if role == .server { frames.append(ByteBuffer(bytes: HTTP2Protocol.clientPreface)) }
        frames.append(ByteBuffer(bytes: wire))
        if role == .server { _ = frames.readBytes(HTTP2Protocol.clientPreface.count) }
        // Time moves a millisecond per frame, so the rate limits see a flood as a flood, reproducibly.
        var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var received = 0
        while true {
            let frame: HTTP2Frame?
            do { frame = try frames.nextFrame() } catch { return nil }
            guard let frame else { return nil }
            received += 1
            now = now + .milliseconds(1)
            state.outputWritable = received % 7 != 0 || control & 0x20 == 0
            let before = out.readableBytes
            let event: HTTP2Event
            do {
                event = try state.receive(frame, now: now, into: &out)
            } catch {
                // A connection error ends the connection: the endpoint writes GOAWAY and reads nothing more.
                state.goAway(code: error.code, into: &out)
                return nil
            }
            if out.readableBytes - before > maximumAnswerPerFrame {
                return FuzzFinding(.http2Connection, "one frame gets a bounded answer",
                                   "\(out.readableBytes - before) bytes for frame type \(frame.type)")
            }
            guard state.connectionSendWindow <= maximumWindow else {
                return FuzzFinding(.http2Connection, "the connection window stays within 2^31-1",
                                   "\(state.connectionSendWindow)")
            }
            switch event {
            case .headers(let streamID, _, let endStream) where role == .server && endStream:
                // Answer at once, as the emulator does: HEADERS (and a body as the window allows).
                state.sentHeaders(streamID: streamID, endStream: false)
                let length = state.reserveSendWindow(streamID: streamID, wanted: 40)
                guard length >= 0, length <= 40 else {
                    return FuzzFinding(.http2Connection, "a reserved window fits what was asked", "\(length)")
                }
                if length == 40 { state.sentEndStream(streamID: streamID) }
            case .headerListTooLarge(let streamID, _, _):
                state.sentHeaders(streamID: streamID, endStream: true)
            case .streamLimitExceeded(_, let lastAccepted):
                state.goAway(lastStreamID: lastAccepted, code: .enhanceYourCalm, into: &out)
            default:
                break
            }
            // The caller drains what it wrote, as a channel would.
            out.clear()
        }
    }
}
