import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A deliberately small HTTP/2-over-TLS client for tests: sends one request per stream and records the server's
/// SETTINGS and GOAWAY frames. It is not Herald's sender (the emulator's tests must not depend on the code they
/// check), and it does nothing clever: no pooling, no retries.
public final class HTTP2TestClient: Sendable {
    /// A response as it came back.
    public struct Response: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: [UInt8]
        public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
        public var reason: String? { json?["reason"] as? String }
    }

    /// What the server said on the connection itself.
    public struct ConnectionEvents: Sendable {
        /// Every `MAX_CONCURRENT_STREAMS` value the server sent, in order.
        public var maxConcurrentStreams: [Int] = []
        /// The debug data of each GOAWAY, as text.
        public var goAways: [String] = []
    }

    private let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>
    private let recorder: FrameRecorder

    private init(channel: any Channel, multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>, recorder: FrameRecorder) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.recorder = recorder
    }

    /// Connects with TLS (ALPN `h2`), trusting the given CA.
    public static func connect(
        host: String = "127.0.0.1", port: Int, trustRootPEM: String, serverName: String = "localhost",
        clientCertificatePEM: String? = nil, clientKeyPEM: String? = nil
    ) async throws -> HTTP2TestClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(trustRootPEM.utf8)))
        tls.applicationProtocols = ["h2"]
        if let clientCertificatePEM, let clientKeyPEM {
            tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(clientCertificatePEM.utf8)).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(clientKeyPEM.utf8), format: .pem))
        }
        let sslContext = try NIOSSLContext(configuration: tls)
        let recorder = FrameRecorder()
        let (channel, multiplexer) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    let multiplexer = try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                        stream.eventLoop.makeSucceededVoidFuture()
                    }
                    try channel.pipeline.syncOperations.addHandler(FrameRecorderHandler(recorder: recorder))
                    return (channel, multiplexer)
                }
            }
        return HTTP2TestClient(channel: channel, multiplexer: multiplexer, recorder: recorder)
    }

    /// Sends one request on a new stream and waits for the whole response.
    public func send(
        method: String = "POST", path: String, authority: String = "localhost", headers: [(String, String)] = [],
        body: [UInt8] = []
    ) async throws -> Response {
        let stream = try await multiplexer.openStream { stream in
            stream.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<HTTP2Frame.FramePayload, HTTP2Frame.FramePayload>(wrappingChannelSynchronously: stream)
            }
        }
        return try await stream.executeThenClose { inbound, outbound in
            var requestHeaders = HPACKHeaders()
            requestHeaders.add(name: ":method", value: method)
            requestHeaders.add(name: ":scheme", value: "https")
            requestHeaders.add(name: ":path", value: path)
            requestHeaders.add(name: ":authority", value: authority)
            for (name, value) in headers { requestHeaders.add(name: name, value: value) }
            try await outbound.write(.headers(.init(headers: requestHeaders, endStream: body.isEmpty)))
            if !body.isEmpty {
                try await outbound.write(.data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true)))
            }
            var status = 0
            var responseHeaders = [String: String]()
            var responseBody = [UInt8]()
            for try await frame in inbound {
                switch frame {
                case .headers(let headers):
                    for header in headers.headers {
                        if header.name == ":status" { status = Int(header.value) ?? 0 } else { responseHeaders[header.name] = header.value }
                    }
                    if headers.endStream { return Response(status: status, headers: responseHeaders, body: responseBody) }
                case .data(let data):
                    if case .byteBuffer(let buffer) = data.data { responseBody.append(contentsOf: buffer.readableBytesView) }
                    if data.endStream { return Response(status: status, headers: responseHeaders, body: responseBody) }
                default:
                    continue
                }
            }
            throw HTTP2TestClientError.streamClosedWithoutResponse
        }
    }

    /// SETTINGS and GOAWAY seen so far.
    public var events: ConnectionEvents { recorder.events.withLock { $0 } }

    /// Whether the connection is still open.
    public var isActive: Bool { channel.isActive }

    /// Returns once the connection has closed (by either side).
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }

    public func close() async {
        try? await channel.close()
    }
}

public enum HTTP2TestClientError: Error, Sendable {
    case streamClosedWithoutResponse
}

final class FrameRecorder: Sendable {
    let events = Mutex(HTTP2TestClient.ConnectionEvents())
}

/// Sees the connection-level frames the HTTP/2 handler passes on.
final class FrameRecorderHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    let recorder: FrameRecorder

    init(recorder: FrameRecorder) { self.recorder = recorder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                recorder.events.withLock { $0.maxConcurrentStreams.append(setting.value) }
            }
        case .goAway(_, _, let data):
            let text = data.map { String(buffer: $0) } ?? ""
            recorder.events.withLock { $0.goAways.append(text) }
        default:
            break
        }
        context.fireChannelRead(data)
    }
}
