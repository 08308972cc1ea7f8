import HTTPTypes
import Hummingbird

/// Lets the pages of the apps' websites (`HERALD_WEB_ORIGIN`) call the registration API from a browser: CORS for
/// `POST /api/token`, `DELETE /api/token/{token}` and `POST /api/events`, and for no other route and no other origin.
///
/// A preflight (`OPTIONS` with `Access-Control-Request-Method`) from a configured origin is `204` with what the
/// registration API takes; from any other origin `403 originNotAllowed`, so a misconfigured site finds out why in its
/// console. An answer to a configured origin (errors included, so the page can read their reason) names it in
/// `Access-Control-Allow-Origin`; an answer to another origin carries no CORS header, and the browser keeps it from
/// the page. The registration key and the rate limits apply as to any client.
struct WebOriginMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The configured web origins (`https://example.com`), lowercase.
    let origins: Set<String>

    /// The paths browsers may call: the registration API's.
    static func isBrowserPath(_ path: String) -> Bool {
        path == "/api/token" || path == "/api/events" || (path.hasPrefix("/api/token/") && !path.dropFirst("/api/token/".count).contains("/"))
    }

    static var allowedHeaders: String { "content-type, x-herald-registration-key" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let origin = request.headers[.origin], Self.isBrowserPath(request.uri.path) else {
            return try await next(request, context)
        }
        let allowed = origins.contains(origin.lowercased())
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            guard allowed else {
                throw APIError(
                    .forbidden, reason: "originNotAllowed",
                    "Pages of \(origin.prefix(100)) may not call this API: set the app's HERALD_WEB_ORIGIN to the site's origin.")
            }
            var headers = HTTPFields()
            headers[.accessControlAllowOrigin] = origin
            headers[.accessControlAllowMethods] = "POST, DELETE"
            headers[.accessControlAllowHeaders] = Self.allowedHeaders
            headers[.accessControlMaxAge] = "600"
            headers[.vary] = "Origin"
            return Response(status: .noContent, headers: headers)
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            guard allowed else { throw error }
            response = try error.response(from: request, context: context)
        }
        if allowed {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.vary] = "Origin"
        }
        return response
    }
}
