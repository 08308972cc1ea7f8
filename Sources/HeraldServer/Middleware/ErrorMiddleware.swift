import HTTPTypes
import HeraldSending
import HeraldStore
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// Turns every failure into the API's JSON error body, so no client ever sees an empty or framework-shaped error.
///
/// ``APIError`` passes through, and the send engine's ``HeraldSending/SendError`` becomes its status. Hummingbird's own `HTTPError`s (no route, body too large) become the matching reason.
/// A store that does not answer, or cannot take a write now (``HeraldStore/StoreError/isTransient``), is `503 unavailable`
/// with `Retry-After`; anything else is `500 internal`, logged here with its detail
/// (which never includes a token or a secret: store and core errors redact them).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The routes, to tell a wrong method (`405`) from an unknown path (`404`).
    let routes: RouteTable
    /// Told of each request the database failed.
    var storeFailed: @Sendable () -> Void = {}

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as SendError {
            throw APIError(error)
        } catch let error as HTTPError {
            if error.status == .notFound {
                let allowed = routes.methods(forPath: request.uri.path)
                if !allowed.isEmpty { throw APIError.methodNotAllowed(request.method, path: request.uri.path, allowed) }
            }
            throw Self.translate(error, path: request.uri.path)
        } catch is NIOTooManyBytesError {
            throw Self.translate(HTTPError(.contentTooLarge), path: request.uri.path)
        } catch let error as StoreError where error.isTransient || error.code == .closed {
            storeFailed()
            context.logger.warning("The store is unavailable", metadata: [LogKey.error: "\(error)"])
            throw APIError.unavailable(error.code)
        } catch let error as HTTPParserError {
            // The body was malformed mid-way (a bad chunk, the client closing early): the client's fault, not ours.
            context.logger.debug("Malformed request body", metadata: [LogKey.error: "\(error)"])
            throw APIError.malformedHTTP(error)
        } catch let error where Self.isClientGone(error) {
            context.logger.debug(
                "The client went away during the request", metadata: [LogKey.error: "\(error)"])
            throw APIError(.badRequest, reason: "incompleteRequest", "The connection closed before the request ended.")
        } catch is CancellationError {
            throw APIError(
                .serviceUnavailable, reason: "unavailable", "The server is shutting down: try again shortly.")
        } catch {
            context.logger.error(
                "Request failed", metadata: [LogKey.error: "\(error)", LogKey.path: "\(request.uri.path)"])
            throw APIError.internal
        }
    }

    /// Whether an error means the client hung up or reset the connection: logged at debug level, since a slow or
    /// flaky network causes it, not the server.
    static func isClientGone(_ error: any Error) -> Bool {
        if error is IOError { return true }
        if let error = error as? ChannelError {
            switch error {
            case .ioOnClosedChannel, .eof, .alreadyClosed, .inputClosed, .outputClosed: return true
            default: return false
            }
        }
        return false
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
