import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import HeraldCore
import ServiceLifecycle

/// `GET /metrics` in Prometheus's text format, behind the bearer key of ``ServerConfiguration/Metrics`` when one is
/// set: `401 invalidMetricsKey` without it. Served by the API's listener or by a listener of its own.
struct MetricsEndpoint: Sendable {
    let registry: PrometheusCollectorRegistry
    /// The secret's SHA-256, compared in constant time; `nil`: no key asked for.
    private let keyDigest: SHA256Digest?
    /// Sets the gauges that are read rather than counted (the shared send budget) just before a scrape.
    let beforeScrape: @Sendable () -> Void

    init(registry: PrometheusCollectorRegistry, bearerKey: String?, beforeScrape: @escaping @Sendable () -> Void) {
        self.registry = registry
        self.keyDigest = bearerKey.map { SHA256.hash(data: Array($0.utf8)) }
        self.beforeScrape = beforeScrape
    }

    func respond(to request: Request) throws -> Response {
        if let keyDigest {
            let presented = request.headers[.authorization].flatMap(APIKeyAuthenticator.bearerSecret)
            // Comparing digests keeps the comparison's time independent of where a guess goes wrong.
            guard let presented, SHA256.hash(data: Array(presented.utf8)) == keyDigest else {
                throw APIError(
                    .unauthorized, reason: "invalidMetricsKey",
                    "Metrics need Authorization: Bearer <HERALD_METRICS_KEY>: give Prometheus the key (authorization.credentials_file).",
                    headers: [.wwwAuthenticate: "Bearer"])
            }
        }
        beforeScrape()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
    }

    /// The routes of a listener of its own: `/metrics`, and `/health` for a probe that checks the port.
    func addPrivateRoutes(to router: Router<BasicRequestContext>) {
        router.get("/metrics") { request, _ in try respond(to: request) }
        router.get("/health") { _, _ in Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#))) }
    }
}

extension MetricsEndpoint {
    /// A listener of its own for `/metrics` and `/health`, run as one of the server's services; reports its port.
    func application(listening address: ServerConfiguration.ListenAddress, logger: Logger, port: OneShot<Int>)
        -> some Service
    {
        let router = Router(context: BasicRequestContext.self)
        addPrivateRoutes(to: router)
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? address.port
                logger.notice("Metrics are served on http://\(address.host):\(bound)/metrics, apart from the API")
                port.fulfil(bound)
            },
            logger: logger)
    }
}
