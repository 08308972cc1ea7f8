import HeraldHTTP2
import NIOCore
import HeraldTesting

/// A TLS connection that speaks HTTP/2 frame by frame, for the protocol rules no well-behaved client breaks.
final class RawHTTP2Connection: Sendable {
    struct Closed: Error {}
    struct TimedOut: Error {}

    private let connection: LoopbackConnection
    private var incoming: AsyncStream<ByteBuffer> { connection.incoming }

    private init(_ connection: LoopbackConnection) { self.connection = connection }

    static func connect(port: Int, trustRootPEM: String) async throws -> RawHTTP2Connection {
        RawHTTP2Connection(try await LoopbackConnection.connect(port: port, trustRootPEM: trustRootPEM, applicationProtocols: ["h2"]))
    }

    /// Writes bytes built by `build` and flushes them.
    func send(_ build: (inout ByteBuffer) -> Void) async throws {
        var buffer = ByteBuffer()
        build(&buffer)
        try await write(buffer)
    }

    func write(_ buffer: ByteBuffer) async throws {
        try await connection.write(buffer)
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
    /// - Throws: ``TimedOut`` when neither happens within `timeout`; the connection is closed then, so a server that
    ///   goes silent fails the test at its deadline rather than at the suite's time limit.
    func frames(until stop: @Sendable (HTTP2Frame) -> Bool, timeout: Duration = .seconds(10)) async throws -> [HTTP2Frame] {
        let deadline = ContinuousClock.now + timeout
        return try await withThrowingTaskGroup { group in
            group.addTask {
                try await Task.sleep(until: deadline)
                await self.close()
            }
            defer { group.cancelAll() }
            var reader = HTTP2FrameReader(maxFrameSize: HTTP2Protocol.maxMaxFrameSize)
            var frames: [HTTP2Frame] = []
            var iterator = incoming.makeAsyncIterator()
            while true {
                while let frame = try reader.nextFrame() {
                    frames.append(frame)
                    if stop(frame) { return frames }
                }
                guard let bytes = await iterator.next() else {
                    if ContinuousClock.now >= deadline { throw TimedOut() }
                    return frames
                }
                reader.append(bytes)
            }
        }
    }

    func close() async {
        await connection.close()
    }
}
