import HTTPTypes
import HeraldStore
import Hummingbird
import Logging

/// Turns every failure into the API's JSON error body, so no client ever sees an empty or framework-shaped error.
///
/// ``APIError`` passes through. Hummingbird's own `HTTPError`s (no route, body too large) become the matching reason.
/// A store that does not answer is `503 unavailable`; anything else is `500 internal`, logged here with its detail
/// (which never includes a token or a secret: store and core errors redact them).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HTTPError {
            throw Self.translate(error, path: request.uri.path)
        } catch let error as StoreError where error.code == .unavailable || error.code == .closed {
            context.logger.warning("The store is unavailable", metadata: [LogKey.error: "\(error)"])
            throw APIError.unavailable
        } catch is CancellationError {
            throw APIError(
                .serviceUnavailable, reason: "unavailable", "The server is shutting down: try again shortly.")
        } catch {
            context.logger.error(
                "Request failed", metadata: [LogKey.error: "\(error)", LogKey.path: "\(request.uri.path)"])
            throw APIError.internal
        }
    }

    static func translate(_ error: HTTPError, path: String) -> APIError {
        switch error.status {
        case .notFound: .notFound(path)
        case .methodNotAllowed:
            APIError(
                .methodNotAllowed, reason: "methodNotAllowed", "\(path) does not take this method: see /openapi.yaml.")
        case .contentTooLarge:
            APIError(.contentTooLarge, reason: "payloadTooLarge", "The request body is too large: send less.")
        case .unauthorized: APIError(.unauthorized, reason: "unauthorized", error.body ?? "Authentication is required.")
        default:
            APIError(error.status, reason: "httpError", error.body ?? "The request failed with \(error.status.code).")
        }
    }
}
