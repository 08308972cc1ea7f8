import Foundation
import HeraldCore
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import SwiftASN1
import X509

/// Binds one environment's port: TLS, ALPN `h2` only, then HTTP/2 with APNs' initial SETTINGS.
enum EmulatorListener {
    struct Context: Sendable {
        let processor: RequestProcessor
        let sslContext: NIOSSLContext
        let maxConcurrentStreams: Int
        let faults: FaultInjector
        let registry: DeviceRegistry
        let clock: any WallClock
    }

    static func bind(host: String, port: Int, context: Context) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // A TCP-level option (`.socketOption` would set SO_DEBUG, refused to a process without CAP_NET_ADMIN).
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = NIOSSLServerHandler(context: context.sslContext)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(
                        ApplicationProtocolNegotiationHandler { result, channel in
                            configureConnection(channel, negotiated: result, context: context)
                        })
                }
            }
            .bind(host: host, port: port).get()
    }

    private static func configureConnection(_ channel: any Channel, negotiated: ALPNResult, context: Context) -> EventLoopFuture<Void> {
        guard case .negotiated("h2") = negotiated else {
            // APNs speaks HTTP/2 only; an HTTP/1.1 client is refused by closing the connection.
            return channel.close()
        }
        context.registry.countConnection()
        var authentication = ConnectionAuthentication()
        var initialStreams = 1
        if let certificate = try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self).peerCertificate {
            guard let topics = clientCertificateTopics(certificate) else { return channel.close() }
            authentication.method = .certificate(topics: topics.all, defaultTopic: topics.bundleID)
            // Certificate connections are authenticated by the handshake, so they start at the full limit.
            initialStreams = context.maxConcurrentStreams
        }
        let settings = EmulatorConnectionHandler.Settings(
            processor: context.processor, faults: context.faults, clock: context.clock,
            maxConcurrentStreams: context.maxConcurrentStreams, authentication: authentication, initialStreams: initialStreams)
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(EmulatorConnectionHandler(settings: settings))
        }
    }

    /// The topics an APNs-style client certificate may push to: the bundle id in the subject's UID, and its VoIP
    /// and complication topics, as Apple's universal certificates list them.
    private static func clientCertificateTopics(_ certificate: NIOSSLCertificate) -> (bundleID: String, all: Set<String>)? {
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der) else { return nil }
        for relativeName in parsed.subject {
            for attribute in relativeName where attribute.type == .RDNAttributeType.userID {
                let bundleID = String(describing: attribute.value)
                return (bundleID, [bundleID, bundleID + ".voip", bundleID + ".complication"])
            }
        }
        return nil
    }
}
