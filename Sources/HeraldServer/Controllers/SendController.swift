import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// `POST /api/send`, `GET /api/sends`, `GET /api/sends/{id}` and `DELETE /api/sends/{id}` (API key with the `send`
/// scope): an adapter that reads requests into plans for the ``HeraldSending/SendEngine`` and writes its answers.
///
/// A send is validated first (`400` with the APNs reason it would cause). A target of at most
/// ``ServerConfiguration/Limits/inlineSendLimit`` devices is sent while the request waits, then recorded whole in one
/// write, and the answer lists every device's outcome; a larger one is queued as a durable job and answered `202` with
/// its id, and so is every send with a schedule (`sendAt`, `localTime`) or a `rate`. A queued or running send can be
/// cancelled: it stops, keeps what it recorded, and is never resumed. A key scoped to apps sends to, lists and
/// cancels its apps' sends only (``KeyAccess``).
struct SendController: Sendable {
    let store: any Store
    let apps: AppDirectory
    let sends: Sends
    let engine: SendEngine
    let limits: ServerConfiguration.Limits
    let clock: any WallClock
    let audit: AuditTrail

    /// - Parameter group: The routes of the `send` scope, behind its key check and idempotency keys.
    func addRoutes(to group: RouterGroup<ServerRequestContext>) {
        group.post("/api/send", use: send)
        group.get("/api/sends", use: list)
        group.get("/api/sends/{id}", use: status)
        group.get("/api/sends/{id}/devices/{token}", use: trace)
        group.delete("/api/sends/{id}", use: cancel)
    }

    @Sendable func send(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let dryRun = try Self.isDryRun(request)
        let bytes = try await request.bodyBytes(limit: limits.sendBodyBytes)
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw APIError.invalidJSON(error.description)
        }
        try TextRules.checkNoNUL(in: value)
        let plan = try sends.plan(SendRequest(json: value), for: context.access)
        if dryRun {
            try await engine.checkSingleToken(of: plan)
            let (count, suppressed) = try await engine.preview(plan, at: clock.now())
            return dryRunAnswer(
                plan, count: count, webSubscriptions: try await engine.webSubscriptionCount(of: plan),
                suppressed: suppressed)
        }
        // The audit entry is written with the send's record, in one write.
        let entry = audit.entry(
            .sendCreated, context, app: plan.bundleID, subject: plan.sendID.description,
            detail: "\(plan.targetDescription): \(plan.summary)")
        let answer = Self.answer(
            try await engine.accept(plan, logger: context.logger, audit: entry), context: context)
        return .json(
            answer.body, status: answer.status,
            headers: answer.status == .accepted ? [.location: "/api/sends/\(plan.sendID)"] : [:])
    }

    /// What a send answered: the send (with every outcome when it was sent inline), `200` or `202` when queued.
    struct Answer {
        var body: JSONValue
        var status: HTTPResponse.Status
    }

    /// An accepted send as the API answers it: `200` with every device's outcome when it was sent while the request
    /// waited, `202` when it was queued.
    static func answer(_ accepted: SendEngine.Accepted, context: ServerRequestContext) -> Answer {
        switch accepted {
        case .sent(let record, let outcomes):
            var body = json(record)
            if case .object(var members) = body {
                let reveal = revealsTokens(to: context)
                members["outcomes"] = .array(outcomes.map { json($0, revealingToken: reveal) })
                body = .object(members)
            }
            return Answer(body: body, status: .ok)
        case .queued(let record):
            return Answer(body: json(record), status: .accepted)
        }
    }

    /// The sends, newest first, one page at a time (`?after=<cursor>&limit=<1…1000>`, default 100): scheduled ones
    /// are `queued` with a `sendAt` in the future.
    @Sendable func list(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let limit = try Self.limit(request.queryParameter("limit"))
        let cursor: SendListCursor? = try Self.cursor(request)
        let page = try await store.recentSends(after: cursor, limit: limit, topics: context.access.topics)
        var members: [String: JSONValue] = ["sends": .array(page.sends.map { Self.json($0) })]
        if let next = page.next { members["next"] = .string(next.description) }
        return .json(.object(members))
    }

    /// A send's status, counts, receipts and one page of outcomes (`?after=<cursor>&limit=<1…1000>`, default 100).
    @Sendable func status(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let id = try Self.sendID(context)
        let limit = try Self.limit(request.queryParameter("limit"))
        let cursor: OutcomeCursor? = try Self.cursor(request)
        let listsShards = try Self.listsShards(request.queryParameter("shards"))
        let record = try await resources.send(id, for: context.access)
        async let receipts = store.receiptCounts(of: id)
        let page = try await store.outcomes(of: id, after: cursor, limit: limit)
        let body = Self.json(record, receipts: try await receipts)
        guard case .object(var members) = body else { return .json(body) }
        if record.shardCount != nil, listsShards {
            members["shards"] = .array(try await store.shards(of: id).map(Self.json))
        }
        let reveal = Self.revealsTokens(to: context)
        members["outcomes"] = .array(
            page.outcomes.map { Self.json(ReportedOutcome(outcome: $0, action: nil), revealingToken: reveal) })
        if let next = page.next { members["next"] = .string(next.description) }
        return .json(.object(members))
    }

    /// Cancels a queued or running send: `200` with the send, now `cancelled` (again, if it was already);
    /// `409 sendFinished` when it had completed or failed; `404 unknownSend`.
    ///
    /// A queued send is never started. A running one stops at once on this instance (the worker is told), and within
    /// its next status check on another instance, without waiting for APNs: what APNs had answered is recorded, the
    /// requests still waiting are cancelled and their devices get no outcome.
    @Sendable func cancel(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let id = try Self.sendID(context)
        _ = try await resources.send(id, for: context.access)
        let record = try await engine.cancel(id)
        await audit.record(.sendCancelled, context, app: record.topic, subject: id.description, detail: record.target)
        context.logger.notice(
            "Cancelled a send",
            metadata: [LogKey.sendID: "\(id)", LogKey.count: "\(record.counts)"])
        return .json(Self.json(record, receipts: try await store.receiptCounts(of: id)))
    }

    private static func sendID(_ context: ServerRequestContext) throws(APIError) -> SendID {
        guard let id = context.parameters.get("id").flatMap(SendID.init) else {
            throw APIError.invalidField("id", "a send id is a UUID, as POST /api/send answered")
        }
        return id
    }

    /// The one access check of the sends, devices and traces this controller reads.
    var resources: VisibleResources { VisibleResources(store: store, apps: apps) }

    /// The page cursor of `?after=`, the `next` of the previous page; `nil` (the first page) when absent or empty.
    static func cursor<Cursor: LosslessStringConvertible>(_ request: Request) throws -> Cursor? {
        guard let after = try request.queryParameter("after"), !after.isEmpty else { return nil }
        guard let cursor = Cursor(after) else {
            throw APIError.invalidField("after", "use the \"next\" value of the previous page")
        }
        return cursor
    }

    /// Whether a send's answer lists its shards (`?shards=all`, the default) or not (`none`): ten million devices make a
    /// thousand shards, which a poll of the send's progress (the console's, every second) need not read and carry.
    static func listsShards(_ text: String?) throws(APIError) -> Bool {
        switch text {
        case nil, "all": return true
        case "none": return false
        default: throw APIError.invalidField("shards", "use all (every shard, the default) or none")
        }
    }

    /// A page size from a query parameter: 1 to 1,000, default 100.
    static func limit(_ text: String?) throws(APIError) -> Int {
        guard let text else { return 100 }
        guard let limit = Int(text), (1...1000).contains(limit) else {
            throw APIError.invalidField("limit", "use a whole number from 1 to 1000")
        }
        return limit
    }

    /// A send as the API shows it, with its receipts (zeros when none were reported) and, once APNs accepted any of
    /// its notifications, the shares of those that devices reported received and opened.
    static func json(_ record: SendRecord, receipts: ReceiptCounts = ReceiptCounts()) -> JSONValue {
        var receiptMembers: [String: JSONValue] = [
            "received": .integer(receipts.received), "opened": .integer(receipts.opened),
            "actions": .integer(receipts.actions), "dismissed": .integer(receipts.dismissed),
        ]
        if let rates = ReceiptRates(receipts, accepted: record.counts.accepted) {
            receiptMembers["receivedRate"] = .number(rates.received)
            receiptMembers["openedRate"] = .number(rates.opened)
        }
        var members: [String: JSONValue] = [
            "receipts": .object(receiptMembers),
            "id": .string(record.id.description),
            "status": .string(record.status.rawValue),
            "target": .string(record.target),
            "summary": .string(record.summary),
            "createdAt": .string(RFC3339.string(record.createdAt)),
            "updatedAt": .string(RFC3339.string(record.updatedAt)),
            "counts": .object([
                "accepted": .integer(record.counts.accepted), "rejected": .integer(record.counts.rejected),
                "failed": .integer(record.counts.failed),
            ]),
        ]
        members["lane"] = .string(record.lane.rawValue)
        members["suppressed"] = suppressedJSON(record.suppressed)
        if record.status == .running, let worker = record.worker { members["worker"] = .string(worker) }
        if let count = record.targetCount { members["targetCount"] = .integer(count) }
        if let message = record.message { members["message"] = .string(message) }
        if let sendAt = record.sendAt { members["sendAt"] = .string(RFC3339.string(sendAt)) }
        return .object(members)
    }

    /// The devices a send left out, by rule, and those it deferred to the end of their quiet hours:
    /// `{"activitiesDisabled": 0, "frequencyCap": 3, "preference": 12, "quietHoursDeferred": 40, "quietHoursDropped": 0}`.
    static func suppressedJSON(_ counts: SuppressedCounts) -> JSONValue {
        .object([
            "activitiesDisabled": .integer(counts.activitiesDisabled),
            "preference": .integer(counts.preference), "frequencyCap": .integer(counts.frequencyCap),
            "quietHoursDropped": .integer(counts.quietHoursDropped), "quietHoursDeferred": .integer(counts.quietHoursDeferred),
        ])
    }

    /// A shard of a large send as the API shows it: its place, status, the worker running it, its size and progress.
    static func json(_ shard: SendShard) -> JSONValue {
        var members: [String: JSONValue] = [
            "index": .integer(shard.index), "status": .string(shard.status.rawValue), "size": .integer(shard.size),
            "recorded": .integer(shard.recorded),
        ]
        if shard.status == .running, let worker = shard.worker { members["worker"] = .string(worker) }
        return .object(members)
    }

    /// Whether outcomes show whole device tokens: only to a key with the `admin` scope, which may list devices anyway.
    /// A `send`-only key sees `…` and the last 8 hex digits (as the logs do), so a send to a topic does not hand it the
    /// whole registry.
    static func revealsTokens(to context: ServerRequestContext) -> Bool {
        context.apiKey?.allows(.admin) == true
    }

    /// An outcome as the API shows it; `revealingToken: false` puts the token's redacted form in `token`.
    static func json(_ reported: ReportedOutcome, revealingToken: Bool) -> JSONValue {
        let outcome = reported.outcome
        var members: [String: JSONValue] = [
            "token": .string(revealingToken ? outcome.token.hex : outcome.token.redacted),
            "environment": .string(outcome.environment.name),
            "at": .string(RFC3339.string(outcome.at)),
        ]
        switch outcome.result {
        case .accepted(let apnsID):
            members["status"] = "accepted"
            members["apnsId"] = .string(apnsID.headerValue)
        case .rejected(let status, let reason, let timestamp):
            members["status"] = "rejected"
            members["httpStatus"] = .integer(status)
            members["reason"] = .string(reason.rawValue)
            if let timestamp { members["timestamp"] = .string(RFC3339.string(timestamp)) }
        case .failed(let message):
            members["status"] = "failed"
            members["message"] = .string(message)
        }
        if let action = reported.action { members["action"] = .string(action.rawValue) }
        return .object(members)
    }
}

/// The shares of a send's accepted notifications that devices reported received and opened, from 0 to 1 (4 decimals).
struct ReceiptRates {
    let received: Double
    let opened: Double

    /// `nil` while APNs accepted nothing: there is nothing to be a share of.
    init?(_ receipts: ReceiptCounts, accepted: Int) {
        guard accepted > 0 else { return nil }
        func share(_ count: Int) -> Double { (min(1, Double(count) / Double(accepted)) * 10_000).rounded() / 10_000 }
        received = share(receipts.received)
        opened = share(receipts.opened)
    }

    /// A share as a percentage for people: `42 %`, `7.5 %`.
    static func percent(_ share: Double) -> String {
        let value = (share * 1000).rounded() / 10
        return value == value.rounded() ? "\(Int(value)) %" : "\(value) %"
    }
}
