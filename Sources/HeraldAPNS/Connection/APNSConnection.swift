import Foundation
import HeraldCore
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// One HTTP/2 connection to APNs. Sendable: everything it does is hopping onto its channel's event loop.
final class APNSConnection: Sendable {
    let id: Int
    let channel: any Channel
    private let handler: NIOLoopBound<APNSConnectionHandler>
    /// Requests waiting for the event loop. Senders on many tasks append here; one loop task writes the whole
    /// batch and flushes once, so a burst leaves in large TCP segments instead of one small segment per request
    /// (small segments overflow the receiver's buffer with per-packet overhead, and loopback then waits out
    /// 200 ms retransmission timeouts).
    private let outbox = Mutex<(requests: [APNSStreamRequest], drainScheduled: Bool)>(([], false))

    private init(id: Int, channel: any Channel, handler: NIOLoopBound<APNSConnectionHandler>) {
        self.id = id
        self.channel = channel
        self.handler = handler
    }

    /// Opens a connection and waits for the server's first SETTINGS frame.
    ///
    /// - Returns: the connection and the server's initial `MAX_CONCURRENT_STREAMS`.
    static func connect(
        id: Int, destination: APNSClientConfiguration.Destination, sslContext: NIOSSLContext,
        configuration: APNSClientConfiguration, events: APNSConnectionHandler.Events
    ) async throws -> APNSConnection {
        let group = MultiThreadedEventLoopGroup.singleton
        let eventLoop = group.next()
        let firstSettings = eventLoop.makePromise(of: Int.self)
        let wrapped = APNSConnectionHandler.Events(
            streamLimitChanged: { limit in
                firstSettings.succeed(limit)
                events.streamLimitChanged(limit)
            },
            goingAway: events.goingAway, streamsIdle: events.streamsIdle, closed: events.closed)
        let serverName = destination.host.first?.isNumber == true || destination.host.contains(":") ? nil : destination.host
        let timeout = TimeAmount.nanoseconds(Int64(Double(configuration.connectTimeout.components.seconds) * 1e9 + Double(configuration.connectTimeout.components.attoseconds) / 1e9))
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(timeout)
                // TCP_NODELAY at the TCP level: `.socketOption(.tcp_nodelay)` sets the same number at the socket
                // level, SO_DEBUG, refused without CAP_NET_ADMIN (every connection failed as a non-root user).
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                // Up to 1,000 streams answer in tiny TLS records; a small receive buffer fills with their per-packet
                // overhead while the loop is busy, the kernel prunes it, and the sender waits out a retransmission.
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                        try channel.pipeline.syncOperations.addHandler(APNSConnectionHandler(
                            events: wrapped, requestTimeout: Self.timeAmount(configuration.requestTimeout),
                            pingInterval: Self.timeAmount(configuration.pingInterval)))
                    }
                }
                .connect(host: destination.host, port: destination.port).get()
        } catch {
            firstSettings.fail(error)
            throw APNSClientError(.connectFailed, "Cannot connect to \(destination): \(error).")
        }
        channel.closeFuture.whenComplete { _ in
            firstSettings.fail(APNSClientError(.connectFailed, "The connection to \(destination) closed during setup (TLS or HTTP/2 refused)."))
        }
        let deadline = eventLoop.scheduleTask(in: timeout) {
            firstSettings.fail(APNSClientError(.connectFailed, "\(destination) sent no HTTP/2 SETTINGS within the connect timeout."))
        }
        do {
            // The pool's task stops waiting when it is cancelled (shutdown), not at the connect timeout.
            _ = try await withTaskCancellationHandler {
                try await firstSettings.futureResult.get()
            } onCancel: {
                firstSettings.fail(APNSClientError(.shutdown, "The connection to \(destination) was abandoned during setup: the client shut down."))
            }
            deadline.cancel()
        } catch {
            deadline.cancel()
            try? await channel.close()
            if let error = error as? APNSClientError { throw error }
            throw APNSClientError(.connectFailed, "Cannot connect to \(destination): \(error).")
        }
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: APNSConnectionHandler.self), eventLoop: channel.eventLoop)
        }.get()
        return APNSConnection(id: id, channel: channel, handler: handler)
    }

    /// Sends one request and waits for its response.
    ///
    /// Cancelling the task answers at once with ``APNSClientError/Code/cancelled``: a request not yet written is never
    /// written, one already written has its stream reset (``APNSCancellation``).
    func execute(template: APNSHeaderTemplate, target: APNSRequestTarget, requestID: String, body: ByteBuffer) async -> Result<APNSResponse, APNSClientError> {
        let cancellation = APNSCancellation()
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                // The handler calls `onResponse` once, on the event loop, whether the answer, a failure or the
                // cancellation comes first: the one resume.
                let request = APNSStreamRequest(
                    template: template, target: target, requestID: requestID, body: body, cancellation: cancellation
                ) { continuation.resume(returning: $0) }
                // Its cancellation reaches this connection alone (below): nothing to attach.
                if cancellation.isCancelled {
                    request.onResponse(.failure(APNSCancellation.beforeSending))
                } else {
                    enqueue(request)
                }
            }
        } onCancel: {
            cancellation.cancel()
            self.cancel(cancellation)
        }
    }

    /// Queues one request; its `onResponse` runs on the event loop when the answer (or failure) is known. A request
    /// whose cancellation came already is answered `cancelled` at once, here, and never sent.
    func submit(_ request: APNSStreamRequest) {
        if let cancellation = request.cancellation, !cancellation.attach(self) {
            request.onResponse(.failure(APNSCancellation.beforeSending))
            return
        }
        enqueue(request)
    }

    /// Hands a request to the event loop with the others waiting; a request whose cancellation comes before the loop
    /// writes it is answered there, unwritten.
    private func enqueue(_ request: APNSStreamRequest) {
        let scheduleDrain = outbox.withLock { outbox in
            outbox.requests.append(request)
            defer { outbox.drainScheduled = true }
            return !outbox.drainScheduled
        }
        if scheduleDrain { channel.eventLoop.execute { self.drain() } }
    }

    /// On the event loop: writes every waiting request and flushes once.
    private func drain() {
        let batch = outbox.withLock { outbox in
            defer { outbox = ([], false) }
            return outbox.requests
        }
        handler.value.write(batch)
    }

    /// On the event loop: answers the requests carrying `cancellation` `cancelled`, resetting the streams of those
    /// already written. Those still waiting for the loop are answered when it reaches them, unwritten.
    func cancel(_ cancellation: APNSCancellation) {
        channel.eventLoop.execute { self.handler.value.cancel(cancellation) }
    }

    func close() async {
        try? await channel.close()
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
