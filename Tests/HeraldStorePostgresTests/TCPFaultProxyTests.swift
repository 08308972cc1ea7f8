import HeraldTesting
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The fault proxy the PostgreSQL resilience tests stand on, checked against an echo server of its own so that a
/// proxy bug never passes for a store bug (and these run without PostgreSQL).
@Suite("TCP fault proxy", .timeLimit(.minutes(1)))
struct TCPFaultProxyTests {
    @Test("pass forwards both ways, in order, and counts the connection")
    func passEchoes() async throws {
        try await withProxy { echo, proxy in
            let peer = try await Peer.connect(port: proxy.port)
            let payload = String((0..<200_000).map { _ in "abcdefghij".randomElement()! })
            try await peer.send(payload)
            #expect(await reaches(peer.received, payload.utf8.count))
            #expect(peer.text == payload)
            #expect(proxy.openConnections == 1)
            #expect(echo.accepted.count == 1)
        }
    }

    @Test("refuse closes open connections on both sides and new ones right after accept; pass works again")
    func refuseCloses() async throws {
        try await withProxy { echo, proxy in
            let old = try await Peer.connect(port: proxy.port)
            try await old.expectEcho("before")
            proxy.setMode(.refuse)
            #expect(proxy.mode == .refuse)
            #expect(await reaches(old.closed, 1))
            #expect(await reaches(echo.closed, 1))
            #expect(proxy.openConnections == 0)

            let refused = try await Peer.connect(port: proxy.port)
            #expect(await reaches(refused.closed, 1))
            #expect(echo.accepted.count == 1)

            proxy.setMode(.pass)
            try await Peer.connect(port: proxy.port).expectEcho("after")
        }
    }

    @Test("blackhole holds bytes both ways and new connections, and delivers all of it in order after pass")
    func blackholeHolds() async throws {
        try await withProxy { echo, proxy in
            let old = try await Peer.connect(port: proxy.port)
            try await old.expectEcho("a")
            proxy.setMode(.blackhole)
            for chunk in ["1", "2", "3"] { try await old.send(chunk) }
            try await echo.push("S")
            let new = try await Peer.connect(port: proxy.port)
            #expect(await eventually(proxy.openConnections == 2))
            try await new.send("b")

            #expect(await !reaches(old.received, 2, within: .milliseconds(300)))
            #expect(new.received.count == 0 && old.closed.count == 0 && new.closed.count == 0)
            #expect(echo.accepted.count == 1 && echo.receivedBytes.count == 1)
            #expect(proxy.openConnections == 2)

            proxy.setMode(.pass)
            #expect(await reaches(old.received, 5))
            // The pushed byte and the echoes travel in opposite directions, so only each direction's order is fixed.
            #expect(old.text.hasPrefix("a") && old.text.filter { $0 != "S" } == "a123" && old.text.contains("S"))
            #expect(await reaches(new.received, 1))
            #expect(new.text == "b")
            #expect(echo.accepted.count == 2)
        }
    }

    @Test("blackhole holds at most the limit per connection and counts what it drops")
    func blackholeBounded() async throws {
        try await withProxy(heldByteLimit: 10) { _, proxy in
            let peer = try await Peer.connect(port: proxy.port)
            try await peer.expectEcho("x")
            proxy.setMode(.blackhole)
            try await peer.send("0123456789abcdef")
            // Read in one chunk (as loopback does), all 16 bytes are dropped; split, the part within the limit is held.
            #expect(await eventually(proxy.droppedBytes > 0))
            proxy.setMode(.pass)
            try await peer.send("ok")
            let dropped = proxy.droppedBytes
            #expect(dropped >= 6)
            #expect(await reaches(peer.received, 1 + 16 - dropped + 2))
            #expect(peer.text.hasPrefix("x") && peer.text.hasSuffix("ok") && peer.text.utf8.count == 3 + 16 - dropped)
        }
    }

    @Test("silent drops bytes; connections open during it stay dead after pass, new ones work")
    func silentKills() async throws {
        try await withProxy { echo, proxy in
            let old = try await Peer.connect(port: proxy.port)
            try await old.expectEcho("a")
            proxy.setMode(.silent)
            try await old.send("lost")
            try await echo.push("S")
            let during = try await Peer.connect(port: proxy.port)
            // Connected is not yet accepted: only a connection the proxy accepted during silent belongs to it.
            #expect(await eventually(proxy.openConnections == 2))
            try await during.send("lost too")
            #expect(await !reaches(old.received, 2, within: .milliseconds(300)))

            proxy.setMode(.pass)
            try await old.send("again")
            try await during.send("again")
            try await Peer.connect(port: proxy.port).expectEcho("new")
            #expect(await !reaches(old.received, 2, within: .milliseconds(300)))
            #expect(during.received.count == 0)
            #expect(old.text == "a" && old.closed.count == 0 && during.closed.count == 0)
            #expect(echo.accepted.count == 2 && echo.receivedBytes.count == 4)
            #expect(proxy.openConnections == 3)

            // Even the upstream closing does not reach a dead connection's client.
            try await echo.closeAll()
            #expect(await !reaches(old.closed, 1, within: .milliseconds(300)))
        }
    }

    @Test("resetAll closes every connection, both sides, and keeps the mode")
    func resetAllCloses() async throws {
        try await withProxy { echo, proxy in
            let first = try await Peer.connect(port: proxy.port)
            let second = try await Peer.connect(port: proxy.port)
            try await first.expectEcho("1")
            try await second.expectEcho("2")
            proxy.resetAll()
            #expect(await reaches(first.closed, 1))
            #expect(await reaches(second.closed, 1))
            #expect(await reaches(echo.closed, 2))
            #expect(proxy.openConnections == 0 && proxy.mode == .pass)
            try await Peer.connect(port: proxy.port).expectEcho("3")
        }
    }

    @Test("an upstream that cannot be reached closes the client")
    func upstreamDown() async throws {
        try await withReservedPort { port in
            let proxy = try await TCPFaultProxy.start(upstreamPort: port)
            try await withCleanup({ await proxy.shutdown() }) {
                let peer = try await Peer.connect(port: proxy.port)
                #expect(await reaches(peer.closed, 1))
                // The proxy forgets a connection before closing it, so this holds once the client sees the close.
                #expect(proxy.openConnections == 0)
            }
        }
    }

    @Test("shutdown is prompt with connections passing, held and dead, and closes them all")
    func shutdownPrompt() async throws {
        let echo = try await EchoServer.start()
        try await withCleanup({ await echo.stop() }) {
            let proxy = try await TCPFaultProxy.start(upstreamPort: echo.port)
            let passing = try await Peer.connect(port: proxy.port)
            try await passing.expectEcho("p")
            proxy.setMode(.silent)
            let dead = try await Peer.connect(port: proxy.port)
            #expect(await eventually(proxy.openConnections == 2))
            proxy.setMode(.blackhole)
            let held = try await Peer.connect(port: proxy.port)
            try await held.send("held")

            let started = ContinuousClock.now
            await proxy.shutdown()
            #expect(ContinuousClock.now - started < .seconds(2))
            for peer in [passing, dead, held] { #expect(await reaches(peer.closed, 1)) }
            #expect(proxy.openConnections == 0)
        }
    }

    private func withProxy(
        heldByteLimit: Int = 64 * 1024 * 1024, _ body: (EchoServer, TCPFaultProxy) async throws -> Void
    ) async throws {
        let echo = try await EchoServer.start()
        try await withCleanup({ await echo.stop() }) {
            let proxy = try await TCPFaultProxy.start(upstreamPort: echo.port, heldByteLimit: heldByteLimit)
            try await withCleanup({ await proxy.shutdown() }) { try await body(echo, proxy) }
        }
    }
}

/// Runs `body` with a port on 127.0.0.1 that refuses connections: bound, never listening, so that no server (these
/// tests run in parallel, in several processes at times) can take it while a closed listener's port could be reused.
private func withReservedPort(_ body: (Int) async throws -> Void) async throws {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    try #require(fd >= 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
        }
    }
    try #require(bound)
    try await body(Int(UInt16(bigEndian: address.sin_port)))
}

/// Whether `signal` reaches `threshold` within `limit`: a bound on waits that should succeed, and the only way to
/// check that something does not happen.
private func reaches(_ signal: CountSignal, _ threshold: Int, within limit: Duration = .seconds(10)) async -> Bool {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await signal.wait(untilAtLeast: threshold) }
        group.addTask { try? await Task.sleep(for: limit) }
        await group.next()
        group.cancelAll()
    }
    return signal.count >= threshold
}

/// For the proxy's own counts, which have no signal to wait on: what it accepted (a client's connect completes before
/// the proxy accepts) and what it dropped.
private func eventually(_ condition: @autoclosure () -> Bool, within limit: Duration = .seconds(10)) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// A test client: counts what it receives and when the proxy closes it.
private final class Peer: Sendable {
    let channel: any Channel
    private let inbox: Inbox

    var received: CountSignal { inbox.received }
    var closed: CountSignal { inbox.closed }
    var text: String { String(decoding: inbox.bytes.withLock { $0 }, as: UTF8.self) }

    private init(channel: any Channel, inbox: Inbox) {
        self.channel = channel
        self.inbox = inbox
    }

    static func connect(port: Int) async throws -> Peer {
        let inbox = Inbox()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(inbox: inbox))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return Peer(channel: channel, inbox: inbox)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Sends `text` and waits for all of it to come back.
    func expectEcho(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let before = received.count
        try await send(text)
        #expect(await reaches(received, before + text.utf8.count), sourceLocation: sourceLocation)
        #expect(self.text.hasSuffix(text), sourceLocation: sourceLocation)
    }

    private final class Inbox: Sendable {
        let received = CountSignal()
        let closed = CountSignal()
        let bytes = Mutex<[UInt8]>([])
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let inbox: Inbox
        init(inbox: Inbox) { self.inbox = inbox }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let count = inbox.bytes.withLock { bytes in
                bytes += unwrapInboundIn(data).readableBytesView
                return bytes.count
            }
            inbox.received.update(count)
        }

        func channelInactive(context: ChannelHandlerContext) {
            inbox.closed.update(1)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}

/// The upstream: echoes what it receives, can push bytes of its own, and counts connections and bytes.
private final class EchoServer: Sendable {
    let accepted = CountSignal()
    let closed = CountSignal()
    let receivedBytes = CountSignal()
    private let counts = Mutex((accepted: 0, closed: 0, bytes: 0, channels: [any Channel]()))
    private let listener = Mutex<(any Channel)?>(nil)

    var port: Int { listener.withLock { $0?.localAddress?.port ?? 0 } }

    static func start() async throws -> EchoServer {
        let server = EchoServer()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Echo(server: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        server.listener.withLock { $0 = channel }
        return server
    }

    /// Writes `text` to every connection, as a server that speaks first (or sends a notice) would.
    func push(_ text: String) async throws {
        for channel in counts.withLock({ $0.channels }) { try await channel.writeAndFlush(ByteBuffer(string: text)) }
    }

    /// Closes every accepted connection, listening on.
    func closeAll() async throws {
        for channel in counts.withLock({ $0.channels }) { try? await channel.close() }
    }

    func stop() async {
        try? await listener.withLock({ $0 })?.close()
        try? await closeAll()
    }

    private final class Echo: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let server: EchoServer
        init(server: EchoServer) { self.server = server }

        func channelActive(context: ChannelHandlerContext) {
            let channel = context.channel
            let count = server.counts.withLock { counts in
                counts.channels.append(channel)
                counts.accepted += 1
                return counts.accepted
            }
            server.accepted.update(count)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let size = unwrapInboundIn(data).readableBytes
            let total = server.counts.withLock { counts in
                counts.bytes += size
                return counts.bytes
            }
            server.receivedBytes.update(total)
            context.write(data, promise: nil)
        }

        func channelReadComplete(context: ChannelHandlerContext) {
            context.flush()
        }

        func channelInactive(context: ChannelHandlerContext) {
            let channel = context.channel
            let count = server.counts.withLock { counts in
                counts.channels.removeAll { $0 === channel }
                counts.closed += 1
                return counts.closed
            }
            server.closed.update(count)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
