import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging
import Prometheus

/// `GET /health` (liveness), `GET /ready` (the database answers and is migrated), `GET /metrics` (Prometheus text)
/// and `GET /openapi.yaml`. No API key: put them behind the network's own rules. `/metrics` is answered here only
/// when ``MetricsEndpoint`` says so (``ServerConfiguration/Metrics``); otherwise `404 metricsNotHere`.
struct OperationsController: Sendable {
    let store: any Store
    let metricsEndpoint: MetricsEndpoint
    /// Whether the API's listener answers `/metrics`.
    let servesMetrics: Bool

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
        guard servesMetrics else {
            throw APIError(
                .notFound, reason: "metricsNotHere",
                "Metrics are not served on this listener: scrape HERALD_METRICS_LISTEN's address, or set HERALD_METRICS_KEY to serve them here behind a bearer key (docs/security.md)."
            )
        }
        return try metricsEndpoint.respond(to: request)
    }

    @Sendable func openAPI(_ request: Request, context: ServerRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
    }
}
