public import NIOCore
import NIOPosix
import NIOSSL

/// A raw connection to a server on 127.0.0.1, plain TCP or TLS, for tests that send what no well-behaved client
/// sends (half-sent requests, malformed framing, protocol violations, stalls): it writes bytes as given and hands back
/// everything the server sends until the server closes or resets the connection.
public final class LoopbackConnection: Sendable {
    /// What the server sends, chunk by chunk; it finishes when the connection closes, from either side.
    public let incoming: AsyncStream<ByteBuffer>
    private let channel: any Channel

    private init(channel: any Channel, incoming: AsyncStream<ByteBuffer>) {
        self.channel = channel
        self.incoming = incoming
    }

    /// Connects to `127.0.0.1:port`; over TLS when `trustRootPEM` is given (the server's name is `localhost`).
    public static func connect(port: Int, trustRootPEM: String? = nil, applicationProtocols: [String] = [])
        async throws -> LoopbackConnection
    {
        let sslContext = try trustRootPEM.map { pem in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            tls.applicationProtocols = applicationProtocols
            return try NIOSSLContext(configuration: tls)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: sslContext, serverHostname: "localhost"))
                    }
                    try channel.pipeline.syncOperations.addHandler(Collector(continuation: continuation))
                    return channel
                }
            }
        return LoopbackConnection(channel: channel, incoming: stream)
    }

    /// Writes the bytes as they are and flushes them.
    public func write(_ buffer: ByteBuffer) async throws {
        try await channel.writeAndFlush(buffer)
    }

    /// Closes the connection from this side.
    public func close() async {
        try? await channel.close()
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let continuation: AsyncStream<ByteBuffer>.Continuation

        init(continuation: AsyncStream<ByteBuffer>.Continuation) { self.continuation = continuation }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            continuation.yield(unwrapInboundIn(data))
        }

        func channelInactive(context: ChannelHandlerContext) {
            continuation.finish()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A reset or a TLS failure from the server ends the conversation too.
            continuation.finish()
            context.close(promise: nil)
        }
    }
}
