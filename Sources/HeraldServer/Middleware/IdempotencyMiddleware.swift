import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// `Idempotency-Key` on the writes that send: a client that retries a request whose answer it never got (a timeout, a
/// dropped connection) gets the first answer again, with the same send id, and nothing is sent twice.
///
/// The key (1 to 255 visible ASCII characters) is scoped to the API key that presents it and kept for the idempotency
/// window (`HERALD_IDEMPOTENCY_WINDOW`, 24 hours). The request is fingerprinted by its method, path and body:
/// - the first request with a key runs; a success (any status below 500) is stored, answered, and replayed to every
///   later request with the same key and fingerprint, marked `Idempotent-Replayed: true`, on any instance and after
///   restarts;
/// - a request refused (an error answer) or failing is not stored: a retry with the same key is judged afresh;
/// - the same key with another method, path or body is `422 idempotencyKeyReused`;
/// - while the first request runs, a duplicate is `409 idempotencyKeyInProgress` with `Retry-After: 1`: retry it;
/// - a first request whose process died before it answered leaves its key claimed until `staleAfter` has passed
///   (longer than any request may take: its sends' retry window), after which a retry runs afresh.
struct IdempotencyMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let store: any Store
    let clock: any WallClock
    /// How long an answer is kept for retries.
    let window: Duration
    /// How long a claim may stay without an answer before a retry may take it.
    let staleAfter: Duration
    /// The largest body read (the endpoints' own limit).
    let bodyLimit: Int

    static let header = HTTPField.Name("Idempotency-Key")!
    static let replayedHeader = HTTPField.Name("Idempotent-Replayed")!
    static let maximumKeyBytes = 255

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard request.method != .get, request.method != .head, let key = request.headers[Self.header] else {
            return try await next(request, context)
        }
        guard (1...Self.maximumKeyBytes).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw APIError(
                .badRequest, reason: "invalidIdempotencyKey",
                "The Idempotency-Key header must be 1 to \(Self.maximumKeyBytes) visible ASCII characters: use a UUID or your own request id."
            )
        }
        let body = try await request.bodyBytes(limit: bodyLimit)
        var request = request
        request.body = RequestBody(buffer: ByteBuffer(bytes: body))
        let scope = context.apiKey.map { $0.id.uuidString } ?? "anonymous"
        let fingerprint = Self.fingerprint(method: request.method.rawValue, path: request.uri.description, body: body)
        let now = clock.now()
        let claim = IdempotencyClaim(
            scope: scope, key: key, fingerprint: fingerprint, at: now,
            expiresAt: now.addingTimeInterval(Self.seconds(window)),
            staleBefore: now.addingTimeInterval(-Self.seconds(staleAfter)))
        switch try await store.claimIdempotencyKey(claim) {
        case .completed(let stored):
            context.logger.info("Replayed the answer of an earlier request with the same Idempotency-Key")
            return Self.replay(stored)
        case .inProgress:
            throw APIError(
                .conflict, reason: "idempotencyKeyInProgress",
                "A request with this Idempotency-Key is still running: retry in a moment to get its answer.",
                headers: [.retryAfter: "1"])
        case .mismatch:
            throw APIError(
                .unprocessableContent, reason: "idempotencyKeyReused",
                "This Idempotency-Key was used for another request (another method, path or body) within the last \(Self.seconds(window) / 3600) hours: give each request its own key, and send a retry exactly as the first."
            )
        case .claimed:
            break
        }
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            try? await store.releaseIdempotencyKey(scope: scope, key: key, fingerprint: fingerprint)
            throw error
        }
        guard response.status.code < 500 else {
            try? await store.releaseIdempotencyKey(scope: scope, key: key, fingerprint: fingerprint)
            return response
        }
        let collected = CollectedBody()
        try await response.body.write(CollectingWriter(into: collected))
        let stored = IdempotentResponse(
            status: response.status.code, body: String(decoding: collected.buffer.readableBytesView, as: UTF8.self),
            location: response.headers[.location])
        try await store.completeIdempotencyKey(scope: scope, key: key, fingerprint: fingerprint, response: stored)
        var answer = response
        answer.body = ResponseBody(byteBuffer: collected.buffer)
        return answer
    }

    /// A stored answer, as the first request gave it.
    static func replay(_ stored: IdempotentResponse) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", replayedHeader: "true"]
        if let location = stored.location { headers[.location] = location }
        return Response(
            status: HTTPResponse.Status(code: stored.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(string: stored.body)))
    }

    /// SHA-256 of the method, the path with its query and the body, NUL between them.
    static func fingerprint(method: String, path: String, body: [UInt8]) -> String {
        var hash = SHA256()
        hash.update(data: Array(method.utf8) + [0] + Array(path.utf8) + [0])
        hash.update(data: body)
        return Hex.string(hash.finalize())
    }

    static func seconds(_ duration: Duration) -> TimeInterval { TimeInterval(duration.components.seconds) }

    /// What a response wrote: the writer is consumed by the body, so it writes into this.
    private final class CollectedBody {
        var buffer = ByteBuffer()
    }

    /// Keeps what a response writes, to store it before it is sent.
    private struct CollectingWriter: ResponseBodyWriter {
        let into: CollectedBody

        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            into.buffer.writeBuffer(&buffer)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
