import HeraldHTTP2
import NIOCore
import NIOPosix
import NIOSSL

/// A TLS connection that speaks HTTP/2 frame by frame, for the protocol rules no well-behaved client breaks.
final class RawHTTP2Connection: Sendable {
    struct Closed: Error {}
    struct TimedOut: Error {}

    private let channel: any Channel
    private let incoming: AsyncStream<ByteBuffer>

    private init(channel: any Channel, incoming: AsyncStream<ByteBuffer>) {
        self.channel = channel
        self.incoming = incoming
    }

    static func connect(port: Int, trustRootPEM: String) async throws -> RawHTTP2Connection {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(trustRootPEM.utf8)))
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(Collector(continuation: continuation))
                    return channel
                }
            }
        return RawHTTP2Connection(channel: channel, incoming: stream)
    }

    /// Writes bytes built by `build` and flushes them.
    func send(_ build: (inout ByteBuffer) -> Void) async throws {
        var buffer = ByteBuffer()
        build(&buffer)
        try await write(buffer)
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await channel.writeAndFlush(buffer)
    }

    /// The preface and an empty SETTINGS frame, as every client starts.
    func start(settings: [(HTTP2SettingID, Int)] = []) async throws {
        try await send { buffer in
            buffer.writeBytes(HTTP2Protocol.clientPreface)
            buffer.writeHTTP2Settings(settings)
        }
    }

    /// A request's header block without Huffman coding or indexing.
    static func requestBlock(path: String, headers: [(String, String)]) -> ByteBuffer {
        var block = ByteBuffer()
        block.writeHPACKIndexed(HPACKStaticIndex.methodPost)
        block.writeHPACKIndexed(HPACKStaticIndex.schemeHTTPS)
        block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.path, value: path.utf8)
        block.writeHPACKLiteral(nameIndex: HPACKStaticIndex.authority, value: "localhost".utf8)
        for (name, value) in headers { block.writeHPACKLiteral(name: name.utf8, value: value.utf8) }
        return block
    }

    /// Every frame the server sends until `stop` accepts one (returned last), or the connection closes.
    func frames(until stop: @Sendable (HTTP2Frame) -> Bool, timeout: Duration = .seconds(10)) async throws -> [HTTP2Frame] {
        var reader = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.maxMaxFrameSize)
        var frames: [HTTP2Frame] = []
        let deadline = ContinuousClock.now + timeout
        var iterator = incoming.makeAsyncIterator()
        while ContinuousClock.now < deadline {
            while let frame = try reader.nextFrame() {
                frames.append(frame)
                if stop(frame) { return frames }
            }
            guard let bytes = await iterator.next() else { return frames }
            reader.append(bytes)
        }
        throw TimedOut()
    }

    func close() async {
        try? await channel.close()
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let continuation: AsyncStream<ByteBuffer>.Continuation

        init(continuation: AsyncStream<ByteBuffer>.Continuation) { self.continuation = continuation }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) { continuation.yield(unwrapInboundIn(data)) }
        func channelInactive(context: ChannelHandlerContext) { continuation.finish() }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}
