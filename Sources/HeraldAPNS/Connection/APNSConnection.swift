import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One HTTP/2 connection to APNs. Sendable: everything it does is hopping onto its channel's event loop.
final class APNSConnection: Sendable {
    let id: Int
    let channel: any Channel

    private init(id: Int, channel: any Channel) {
        self.id = id
        self.channel = channel
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
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                        var settings = NIOHTTP2Handler.ConnectionConfiguration()
                        settings.initialSettings = [
                            HTTP2Setting(parameter: .enablePush, value: 0),
                            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                            HTTP2Setting(parameter: .initialWindowSize, value: 65535),
                        ]
                        try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: settings))
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
            _ = try await firstSettings.futureResult.get()
            deadline.cancel()
        } catch {
            deadline.cancel()
            try? await channel.close()
            if let error = error as? APNSClientError { throw error }
            throw APNSClientError(.connectFailed, "Cannot connect to \(destination): \(error).")
        }
        return APNSConnection(id: id, channel: channel)
    }

    /// Sends one request and waits for its response.
    func execute(headers: HPACKHeaders, body: ByteBuffer) async throws -> APNSResponse {
        let promise = channel.eventLoop.makePromise(of: APNSResponse.self)
        // A write to a channel that already closed never reaches the handler: fail the request then, or it waits forever.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in
            promise.fail(APNSClientError(.notProcessed, "The connection had closed; the notification was not sent on it."))
        }
        channel.write(APNSStreamRequest(headers: headers, body: body, promise: promise), promise: written)
        return try await promise.futureResult.get()
    }

    func close() async {
        try? await channel.close()
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
