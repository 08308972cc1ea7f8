import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream: gathers the request, asks the ``RequestProcessor``, writes the answer.
///
/// The processing runs synchronously on the event loop (a few microseconds of pure checks under short locks): an
/// async hop per request would cost more than the work and the emulator must never be the bottleneck of a benchmark.
final class EmulatorStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let processor: RequestProcessor
    private let connection: NIOLoopBound<EmulatorConnection>
    private let maxConcurrentStreams: Int
    private let faults: FaultInjector
    private let clock: any WallClock
    private var method = ""
    private var path = ""
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    private var completed = false

    init(processor: RequestProcessor, connection: NIOLoopBound<EmulatorConnection>, maxConcurrentStreams: Int, faults: FaultInjector, clock: any WallClock) {
        self.clock = clock
        self.processor = processor
        self.connection = connection
        self.maxConcurrentStreams = maxConcurrentStreams
        self.faults = faults
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            for header in frame.headers {
                switch header.name {
                case ":method": method = header.value
                case ":path": path = header.value
                case ":scheme", ":authority": break
                default: headers.append((header.name, header.value))
                }
            }
            if frame.endStream { complete(context: context) }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { body.append(contentsOf: buffer.readableBytesView) }
            if frame.endStream { complete(context: context) }
        default:
            break
        }
    }

    private func complete(context: ChannelHandlerContext) {
        guard !completed else { return }
        completed = true
        let connection = self.connection.value
        let streamID = (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)) ?? .rootStream
        // After a GOAWAY, streams above its last-stream-id are not processed: the client must send them again.
        if let last = connection.goAwayLastStreamID, streamID > last { return }

        let request = EmulatedRequest(method: method, path: path, headers: headers, body: body)
        let response = processor.process(request, connection: &connection.authentication, now: clock.now())
        if connection.authentication.hasValidatedRequest { connection.raiseStreamLimit(to: maxConcurrentStreams) }
        connection.streamsServed += 1

        switch response.fault {
        case .reset:
            // Answers already given go out first (stream writes are flushed when the read cycle ends, so the close
            // waits for that): the fault is that this stream, and the ones not yet read, get no answer.
            let parent = connection.parent
            context.eventLoop.execute { parent.close(promise: nil) }
            return
        case .noResponse:
            return
        default:
            break
        }
        let limit = faults.configuration.goAwayAfterStreams
        let goAway = response.fault == .goAway || (limit.map { connection.streamsServed >= $0 } ?? false)
        connection.inFlight += 1
        let write = { [self] in
            self.write(response, context: context)
            connection.inFlight -= 1
            if goAway {
                self.processor.registry.countGoAway()
                connection.goAway(lastStreamID: streamID, reason: .shutdown)
            } else {
                connection.closeIfDrained()
            }
        }
        if response.delayMilliseconds > 0 {
            context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(response.delayMilliseconds * 1_000_000))) { write() }
        } else {
            write()
        }
    }

    private func write(_ response: EmulatedResponse, context: ChannelHandlerContext) {
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(response.status))
        headers.add(name: "apns-id", value: response.apnsID)
        if let uniqueID = response.uniqueID { headers.add(name: "apns-unique-id", value: uniqueID) }
        if let body = response.body {
            headers.add(name: "content-type", value: "application/json")
            context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: false))), promise: nil)
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        } else {
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
        }
    }
}
