import HTTPTypes
import HeraldCore
import Hummingbird
import Logging
import HeraldSending

/// Gives every response of the console's routes the console's security headers, and turns a failure there into an
/// HTML page instead of the API's JSON error. Attached to the console's route group (``ConsoleController``), and
/// through ``ConsoleNotFoundMiddleware`` to a path under `/console` that no route matches.
///
/// The policy allows only the console's own style sheet and scripts (no inline script or style), no framing, no
/// forms to elsewhere, and sends no referrer (a one-time sign-in link never leaks through one).
struct ConsoleSecurityMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let renderer: ConsoleRenderer

    static let headers: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!:
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
    ]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            response = renderer.errorPage(status: error.status, message: error.message, context: context)
            response.headers.append(contentsOf: error.headers)
        } catch let error as HTTPError {
            let message =
                error.status == .notFound
                ? "There is no such page in the console." : (error.body ?? "The request failed.")
            response = renderer.errorPage(status: error.status, message: message, context: context)
        } catch {
            context.logger.error(
                "Console request failed", metadata: [LogKey.error: "\(error)", LogKey.path: "\(request.uri.path)"])
            response = renderer.errorPage(
                status: .internalServerError,
                message: "The console failed unexpectedly: try again, and see the server log if it persists.",
                context: context)
        }
        for field in Self.headers { response.headers[field.name] = field.value }
        return response
    }
}

/// Answers a request under `/console` that no route matched (`/console/nowhere`) as the console does: an HTML error
/// page with the console's headers and, for a signed-in browser, its navigation, instead of the API's JSON error.
///
/// It looks at the path only once the router has failed the request, so the API's requests pass through it
/// untouched; the console's own routes answer their errors in their group (``ConsoleSecurityMiddleware``).
struct ConsoleNotFoundMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let security: ConsoleSecurityMiddleware
    let authority: ConsoleAuthority

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch where request.uri.path == "/console" || request.uri.path.hasPrefix("/console/") {
            var context = context
            if request.headers[.authorization] == nil {
                context.consoleSession = try? await authority.session(for: request)
            }
            return try await security.handle(request, context: context) { _, _ in throw error }
        }
    }
}
