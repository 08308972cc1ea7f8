import HTTPTypes
import HeraldCore
import Hummingbird
import Logging
import HeraldSending

/// Gives every response under `/console` the console's security headers, and turns a failure there into an HTML
/// page instead of the API's JSON error.
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
        guard request.uri.path == "/console" || request.uri.path.hasPrefix("/console/") else {
            return try await next(request, context)
        }
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
