import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// `POST /api/events`: delivery receipts from the apps' SDK — a notification received, opened, an action chosen,
/// dismissed — authenticated and rate-limited like `POST /api/token` (docs/server.md, "Delivery receipts").
///
/// A batch is checked whole before anything is stored (`400` naming the field), then recorded in one transaction.
/// Events are idempotent: the same report twice counts once. A report about a notification APNs never accepted for
/// that device (an unknown send, another device's, a rejected one) is ignored, so reports cannot inflate a send's
/// counts.
struct EventsController: Sendable {
    let store: any Store
    let apps: AppDirectory
    let rateLimiter: RateLimiter?
    let metrics: ServerMetrics

    func addRoutes(to router: Router<ServerRequestContext>) {
        router.post("/api/events", use: report)
    }

    /// Records a batch: `200` with how many events were recorded, were duplicates, or were ignored.
    @Sendable func report(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try rateLimiter?.admit(context.remoteAddress?.ipAddress ?? "local")
        let allowed = try apps.topicsAllowed(byRegistrationKey: request.headers[.registrationKey])
        let body = try EventsBody(json: try await request.bodyBytes(limit: EventsBody.maximumBytes))
        var events = body.events
        var ignored = 0
        if allowed != nil {
            // A registration key speaks for its own apps' devices only: another app's device is ignored as one that
            // is gone, so that the answer does not tell which tokens another app has.
            var known: [DeviceToken: Bool] = [:]
            for token in Set(events.map(\.token)) {
                known[token] = try await store.device(token).map { allowed.opens($0.topic) } ?? false
            }
            let before = events.count
            events.removeAll { known[$0.token] != true }
            ignored = before - events.count
        }
        let results = try await store.recordReceipts(events)
        let recorded = results.filter { $0 == .recorded }.count
        let duplicates = results.filter { $0 == .duplicate }.count
        ignored += results.filter { $0 == .unknownDelivery }.count
        metrics.receipts(recorded: recorded, duplicates: duplicates, ignored: ignored)
        context.logger.debug(
            "Recorded delivery receipts",
            metadata: [LogKey.count: "recorded \(recorded), duplicates \(duplicates), ignored \(ignored)"])
        return .json(
            .object([
                "recorded": .integer(recorded), "duplicates": .integer(duplicates), "ignored": .integer(ignored),
            ]))
    }
}
