import HeraldCore
import NIOCore
import NIOHTTP2

/// Per-connection state shared by the connection's streams. Lives on the connection's event loop (stream channels
/// run on their parent's loop), so it needs no lock: it is only reached through `NIOLoopBound`.
final class EmulatorConnection {
    var authentication = ConnectionAuthentication()
    /// Whether `MAX_CONCURRENT_STREAMS` was raised from 1 after the first authenticated request.
    var streamLimitRaised = false
    var streamsServed = 0
    /// Streams answered or being answered; a GOAWAY closes the connection once this drains.
    var inFlight = 0
    /// Set when a GOAWAY was sent: streams above this id are left unprocessed, as APNs does.
    var goAwayLastStreamID: HTTP2StreamID?
    let parent: any Channel

    init(parent: any Channel, authentication: ConnectionAuthentication) {
        self.parent = parent
        self.authentication = authentication
    }

    func raiseStreamLimit(to limit: Int) {
        guard !streamLimitRaised else { return }
        streamLimitRaised = true
        let settings = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([
            HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)
        ])))
        parent.writeAndFlush(settings, promise: nil)
    }

    /// Sends GOAWAY with a JSON reason; the connection closes when the streams it still answers are done.
    func goAway(lastStreamID: HTTP2StreamID, reason: APNSReason) {
        guard goAwayLastStreamID == nil else { return }
        goAwayLastStreamID = lastStreamID
        var debugData = parent.allocator.buffer(capacity: 32)
        debugData.writeBytes(JSONValue.object(["reason": .string(reason.rawValue)]).jsonBytes)
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: debugData))
        parent.writeAndFlush(frame, promise: nil)
        closeIfDrained()
    }

    /// Closes after the current read cycle: stream channels flush their answers when it ends, and closing
    /// before that would drop answers already given.
    func closeIfDrained() {
        guard goAwayLastStreamID != nil, inFlight == 0 else { return }
        let parent = self.parent
        parent.eventLoop.execute { parent.close(promise: nil) }
    }
}

/// Sits after the HTTP/2 handler: a client that opens more streams than advertised gets a GOAWAY with APNs' words.
final class StreamLimitEnforcer: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError, streamError.baseError is NIOHTTP2Errors.MaxStreamsViolation {
            var debugData = context.channel.allocator.buffer(capacity: 64)
            debugData.writeString(#"{"reason":"Maximum active streams violated for this endpoint."}"#)
            let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .enhanceYourCalm, opaqueData: debugData))
            let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(NIOAny(frame)).whenComplete { _ in boundContext.value.close(promise: nil) }
            return
        }
        context.fireErrorCaught(error)
    }
}
