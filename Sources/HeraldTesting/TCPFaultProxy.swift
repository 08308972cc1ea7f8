import NIOCore
import NIOPosix
import Synchronization

/// A loopback TCP proxy that breaks the network between Herald and PostgreSQL on demand.
///
/// A stopped server, a partition and a NAT that forgot a connection fail differently (a close the client sees at once,
/// a stall that heals, a stall that never does), and the store must survive all three; PostgreSQL alone can only give
/// the first. Tests put this proxy between the store and the server and switch its ``Mode``.
///
/// Each connection's state lives on its client channel's event loop, and its upstream is opened on that same loop, so
/// forwarding is a plain write with no hop and no lock; only the mode and the set of connections sit behind a mutex,
/// which every read consults so that a mode set before a byte arrives always applies to that byte.
public final class TCPFaultProxy: Sendable {
    /// How the network between clients and the upstream behaves.
    public enum Mode: Sendable, Equatable {
        /// Bytes are forwarded both ways.
        case pass
        /// A stopped server: every open connection is closed at once (both sides), new ones right after accept.
        case refuse
        /// A partition: bytes both ways are held, and new connections are accepted and held without reaching the
        /// upstream. Back to ``pass`` what was held is delivered in order, as TCP retransmission would after a heal;
        /// an upstream close seen meanwhile reaches the client only then, after the bytes that preceded it.
        case blackhole
        /// A NAT that lost its state: as ``blackhole``, but what arrives is dropped, and every connection open during
        /// it stays dead for good, even after ``pass``: it never delivers a byte again, and an upstream close does not
        /// reach the client, since a peer behind such a NAT learns nothing until its own timeouts fire. Only
        /// connections opened after the return to ``pass`` work. (``refuse``, ``resetAll()``, ``shutdown()`` and the
        /// client closing its end still close a dead connection, so no test leaks a PostgreSQL session.)
        case silent
    }

    private let core: Core
    private let listener: any Channel

    /// The port the proxy listens on, on 127.0.0.1.
    public let port: Int

    private init(core: Core, listener: any Channel, port: Int) {
        self.core = core
        self.listener = listener
        self.port = port
    }

    /// Starts listening on 127.0.0.1 (a free port) and forwards each accepted connection to upstreamHost:upstreamPort.
    ///
    /// `heldByteLimit` bounds what one connection holds in ``Mode/blackhole`` (or while its upstream connects), so a
    /// client that keeps writing into a partition cannot exhaust the test process; past it bytes are dropped and
    /// counted in ``droppedBytes``, and that connection's stream is then corrupt.
    public static func start(
        upstreamHost: String = "127.0.0.1", upstreamPort: Int, heldByteLimit: Int = 64 * 1024 * 1024
    ) async throws -> TCPFaultProxy {
        let core = Core(upstreamHost: upstreamHost, upstreamPort: upstreamPort, heldByteLimit: heldByteLimit)
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let link = core.admit(channel) {
                        try channel.pipeline.syncOperations.addHandler(ClientHandler(link: link))
                    } else {
                        try channel.pipeline.syncOperations.addHandler(CloseOnActive())
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw ChannelError.unknownLocalAddress
        }
        return TCPFaultProxy(core: core, listener: listener, port: port)
    }

    deinit {
        // A test that forgot shutdown() (or failed before it) must not leave sockets open for the rest of the run.
        listener.close(promise: nil)
        for link in core.takeAll(shuttingDown: true) { link.client.eventLoop.execute { _ = link.close() } }
    }

    /// The current mode.
    public var mode: Mode { core.state.withLock { $0.mode } }

    /// Switches the mode; it applies to every byte that arrives after this returns.
    public func setMode(_ mode: Mode) {
        let links = core.state.withLock { state -> [Link] in
            state.mode = mode
            switch mode {
            case .refuse: return state.removeAll()
            case .silent:
                state.dead.formUnion(state.links.keys)
                return Array(state.links.values)
            case .pass: return state.links.values.filter { !state.dead.contains($0.id) }
            case .blackhole: return []
            }
        }
        for link in links {
            link.client.eventLoop.execute {
                switch mode {
                case .refuse: _ = link.close()
                case .silent: link.dropHeld()
                case .pass: link.pump()
                case .blackhole: break
                }
            }
        }
    }

    /// Closes every open connection, both sides (a proxy or failover that resets connections), without changing the mode.
    public func resetAll() {
        for link in core.takeAll(shuttingDown: false) { link.client.eventLoop.execute { _ = link.close() } }
    }

    /// Connections currently open through the proxy (client side).
    public var openConnections: Int { core.state.withLock { $0.links.count } }

    /// Bytes dropped because a connection already held ``start(upstreamHost:upstreamPort:heldByteLimit:)``'s limit.
    public var droppedBytes: Int { core.state.withLock { $0.droppedBytes } }

    /// Stops listening and closes every connection. Returns once their sockets are closed, which is prompt: nothing
    /// here waits on a peer.
    public func shutdown() async {
        let links = core.takeAll(shuttingDown: true)
        try? await listener.close()
        for link in links {
            try? await link.client.eventLoop.flatSubmit { link.close() }.get()
        }
    }
}

extension TCPFaultProxy {
    /// What the connections share: kept apart from the proxy so that open connections, which point here, do not keep
    /// a forgotten proxy alive and its deinit can still close them.
    fileprivate final class Core: Sendable {
        struct State {
            var mode = Mode.pass
            var links: [Int: Link] = [:]
            /// Connections that were open during ``Mode/silent``.
            var dead: Set<Int> = []
            var nextID = 0
            var isShutDown = false
            var droppedBytes = 0

            mutating func removeAll() -> [Link] {
                defer {
                    links = [:]
                    dead = []
                }
                return Array(links.values)
            }
        }

        let state = Mutex(State())
        let upstreamHost: String
        let upstreamPort: Int
        let heldByteLimit: Int

        init(upstreamHost: String, upstreamPort: Int, heldByteLimit: Int) {
            self.upstreamHost = upstreamHost
            self.upstreamPort = upstreamPort
            self.heldByteLimit = heldByteLimit
        }

        /// Registers an accepted channel, or returns nil when it must be closed at once. Checked under the same lock
        /// as mode changes, so a connection is either refused or seen (and closed) by a later refuse, never missed.
        func admit(_ channel: any Channel) -> Link? {
            state.withLock { state in
                guard !state.isShutDown, state.mode != .refuse else { return nil }
                let link = Link(id: state.nextID, client: channel, core: self)
                state.nextID += 1
                state.links[link.id] = link
                if state.mode == .silent { state.dead.insert(link.id) }
                return link
            }
        }

        func takeAll(shuttingDown: Bool) -> [Link] {
            state.withLock { state in
                if shuttingDown { state.isShutDown = true }
                return state.removeAll()
            }
        }

        func remove(_ id: Int) {
            state.withLock { state in
                state.links[id] = nil
                state.dead.remove(id)
            }
        }

        /// The mode, and whether the connection died in ``Mode/silent`` (read together: both change under one lock).
        func condition(of id: Int) -> (mode: Mode, dead: Bool) {
            state.withLock { ($0.mode, $0.dead.contains(id)) }
        }
    }

    /// One client connection and its upstream. Every method runs on the client's event loop (the box checks it).
    fileprivate final class Link: Sendable {
        struct State {
            var upstream: (any Channel)?
            var connecting = false
            /// The upstream closed while its close could not be delivered (a partition): the client learns of it once
            /// the bytes held before it are delivered.
            var upstreamEnded = false
            var closed = false
            var toUpstream: [ByteBuffer] = []
            var toClient: [ByteBuffer] = []
            var held = 0
        }

        let id: Int
        let client: any Channel
        private let core: Core
        private let state: NIOLoopBoundBox<State>

        init(id: Int, client: any Channel, core: Core) {
            self.id = id
            self.client = client
            self.core = core
            self.state = .makeBoxSendingValue(State(), eventLoop: client.eventLoop)
        }

        func received(_ buffer: ByteBuffer, fromClient: Bool) {
            let (mode, dead) = core.condition(of: id)
            guard !dead, !state.value.closed, mode == .pass || mode == .blackhole else { return }
            guard state.value.held + buffer.readableBytes <= core.heldByteLimit else {
                core.state.withLock { $0.droppedBytes += buffer.readableBytes }
                return
            }
            state.value.held += buffer.readableBytes
            if fromClient { state.value.toUpstream.append(buffer) } else { state.value.toClient.append(buffer) }
            if mode == .pass { pump() }
        }

        /// Delivers what is held, opening the upstream first if this connection has none yet, when the mode allows.
        func pump() {
            let (mode, dead) = core.condition(of: id)
            guard !state.value.closed, !dead, mode == .pass else { return }
            if let upstream = state.value.upstream {
                Self.deliver(&state.value.toUpstream, to: upstream)
            } else if !state.value.connecting && !state.value.upstreamEnded {
                connect()
            }
            let last = Self.deliver(&state.value.toClient, to: client)
            state.value.held = state.value.toUpstream.reduce(0) { $0 + $1.readableBytes }
            if state.value.upstreamEnded {
                // Closing at once would discard writes not yet taken by the socket.
                (last ?? client.eventLoop.makeSucceededVoidFuture()).whenComplete { _ in _ = self.close() }
            }
        }

        @discardableResult
        private static func deliver(_ buffers: inout [ByteBuffer], to channel: any Channel) -> EventLoopFuture<Void>? {
            guard !buffers.isEmpty else { return nil }
            defer { buffers = [] }
            for buffer in buffers.dropLast() { channel.write(buffer, promise: nil) }
            return channel.writeAndFlush(buffers[buffers.count - 1])
        }

        private func connect() {
            state.value.connecting = true
            ClientBootstrap(group: client.eventLoop)
                .connectTimeout(.seconds(10))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(UpstreamHandler(link: self))
                    }
                }
                .connect(host: core.upstreamHost, port: core.upstreamPort)
                .whenFailure { _ in
                    // Handled as an upstream that closed: the client is closed, unless the mode hides that from it.
                    self.state.value.connecting = false
                    self.upstreamInactive()
                }
        }

        func upstreamActive(_ channel: any Channel) {
            state.value.connecting = false
            guard !state.value.closed else { return channel.close(promise: nil) }
            state.value.upstream = channel
            pump()
        }

        func upstreamInactive() {
            state.value.upstream = nil
            state.value.upstreamEnded = true
            // Silent: the close stays hidden for good; blackhole: until pass (pump then delivers it).
            let (mode, dead) = core.condition(of: id)
            guard !dead, mode != .blackhole else { return }
            if mode == .pass { pump() } else { _ = close() }
        }

        func dropHeld() {
            state.value.toUpstream = []
            state.value.toClient = []
            state.value.held = 0
        }

        /// Closes both sides; the future completes once both sockets are closed.
        func close() -> EventLoopFuture<Void> {
            if !state.value.closed {
                state.value.closed = true
                dropHeld()
                core.remove(id)
                client.close(promise: nil)
                state.value.upstream?.close(promise: nil)
            }
            let upstreamClosed = state.value.upstream?.closeFuture ?? client.eventLoop.makeSucceededVoidFuture()
            return client.closeFuture.and(upstreamClosed).map { _ in }
        }
    }

    private final class ClientHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let link: Link
        init(link: Link) { self.link = link }

        func channelActive(context: ChannelHandlerContext) {
            link.pump()
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            link.received(unwrapInboundIn(data), fromClient: true)
        }

        func channelInactive(context: ChannelHandlerContext) {
            _ = link.close()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    private final class UpstreamHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let link: Link
        init(link: Link) { self.link = link }

        func channelActive(context: ChannelHandlerContext) {
            link.upstreamActive(context.channel)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            link.received(unwrapInboundIn(data), fromClient: false)
        }

        func channelInactive(context: ChannelHandlerContext) {
            link.upstreamInactive()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    /// What a refused connection gets: accepted, then closed, as the mode promises.
    private final class CloseOnActive: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer

        func channelActive(context: ChannelHandlerContext) {
            context.close(promise: nil)
        }
    }
}
