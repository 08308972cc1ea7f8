import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// `POST /api/token` and `DELETE /api/token/{token}`: exactly docs/api-registration.md.
struct RegistrationController: Sendable {
    let store: any Store
    let apps: AppDirectory
    let rateLimiter: RateLimiter?
    let metrics: ServerMetrics
    let audit: AuditTrail

    func addRoutes(to router: Router<ServerRequestContext>) {
        router.post("/api/token", use: register)
        router.delete("/api/token/{token}", use: unregister)
    }

    /// Registers a token, or updates its registration: `201` when new, `200` when known, with the stored record.
    @Sendable func register(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try admit(context)
        let allowed = try apps.topicsAllowed(byRegistrationKey: request.headers[.registrationKey])
        let body = try RegistrationBody(
            json: try await request.bodyBytes(limit: ServerConfiguration.Limits.registrationBodyBytes),
            pushServices: apps.pushServices)
        let app = try apps.app(named: body.topic, seenBy: allowed)
        try allowed.check(app.bundleID)
        try app.checkTakes(body.tokenKind)
        let result: UpsertResult
        do {
            result = try await store.upsert(body.registration(topic: app.bundleID))
        } catch let error as StoreError where error.code == .invalidRecord {
            throw APIError(.badRequest, reason: "invalidField", error.message)
        }
        try await PushToStartChecks.noteRegistration(result.registration.registration, in: store)
        metrics.registration(result.change)
        for old in result.movedAside {
            context.logger.info(
                "Removed a token the same installation replaced",
                metadata: [LogKey.tokenSuffix: "\(old.redacted)", LogKey.reason: "replacedByInstallation"])
        }
        context.logger.debug(
            "Registered a token",
            metadata: [
                LogKey.tokenSuffix: "\(body.token.redacted)", LogKey.environment: "\(body.environment)",
                LogKey.topic: "\(app.bundleID)",
            ])
        return .json(result.registration.json(), status: result.change == .created ? .created : .ok)
    }

    /// Unregisters a token: `204`, or `404 unknownToken`.
    @Sendable func unregister(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try admit(context)
        let allowed = try apps.topicsAllowed(byRegistrationKey: request.headers[.registrationKey])
        let token = try RegistrationBody.parseToken(context.parameters.get("token") ?? "")
        // The app's name is the audit entry's actor, so the device is read first even without registration keys.
        // Another app's token is as unknown as a missing one, and stays.
        guard let device = try await store.device(token), allowed.opens(device.topic) else { throw Self.unknownToken }
        guard try await store.remove(token) else { throw Self.unknownToken }
        metrics.unregistration()
        context.logger.info(
            "Unregistered a token",
            metadata: [LogKey.tokenSuffix: "\(token.redacted)", LogKey.reason: "unregistered by the app"])
        await audit.record(
            AuditEntry(
                at: audit.clock.now(), actor: AuditActor(kind: .app, keyID: nil, name: device.topic),
                address: AuditTrail.address(context), action: .deviceRemoved, app: device.topic,
                subject: token.redacted, detail: "unregistered by the app"),
            logger: context.logger)
        return Response(status: .noContent)
    }

    private static let unknownToken = APIError(
        .notFound, reason: "unknownToken", "This token is not registered: there is nothing to remove.")

    private func admit(_ context: ServerRequestContext) throws(APIError) {
        try rateLimiter?.admit(context.remoteAddress?.ipAddress ?? "local")
    }
}
