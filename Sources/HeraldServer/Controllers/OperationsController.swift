import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging
import Prometheus

/// `GET /health` (liveness), `GET /ready` (the database answers and is migrated), `GET /metrics` (Prometheus text)
/// and `GET /openapi.yaml`. No authentication: put them behind the network's own rules.
struct OperationsController: Sendable {
    let store: any Store
    let registry: PrometheusCollectorRegistry
    /// Sets the gauges that are read rather than counted (the shared send budget) just before a scrape.
    var beforeScrape: @Sendable () -> Void = {}

    func addRoutes(to router: Router<ServerRequestContext>) {
        router.get("/health", use: health)
        router.get("/ready", use: ready)
        router.get("/metrics", use: metrics)
        router.get("/openapi.yaml", use: openAPI)
    }

    @Sendable func health(_ request: Request, context: ServerRequestContext) async throws -> Response {
        .json(["status": "ok"])
    }

    @Sendable func ready(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let health: StoreHealth
        do {
            health = try await store.health()
        } catch {
            context.logger.warning("Not ready: the store does not answer", metadata: [LogKey.error: "\(error)"])
            throw APIError(
                .serviceUnavailable, reason: "unavailable",
                "The database does not answer: check HERALD_DATABASE_URL and the database server.")
        }
        guard health.isMigrated else {
            throw APIError(
                .serviceUnavailable, reason: "notMigrated",
                "The database schema is at \(health.schemaVersion) of \(health.latestSchemaVersion): the server migrates it at start."
            )
        }
        return .json([
            "status": "ready", "database": .string(health.backend), "schemaVersion": .integer(health.schemaVersion),
        ])
    }

    @Sendable func metrics(_ request: Request, context: ServerRequestContext) async throws -> Response {
        beforeScrape()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
    }

    @Sendable func openAPI(_ request: Request, context: ServerRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
    }
}
