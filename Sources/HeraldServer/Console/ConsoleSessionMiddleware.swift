import HTTPTypes
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// Finds the console session of a request that carries the session cookie (and no `Authorization` header).
///
/// Console pages read it from ``ServerRequestContext/consoleSession``. Under `/api/`, the session also authenticates
/// the call as an `admin` + `send` key would, so the console's scripts use the same API as everyone else (the dry
/// run, sends, their progress); a call that changes something must then carry the session's CSRF token in
/// `X-Herald-CSRF`, else it is `403 csrfTokenMissing`.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let authority: ConsoleAuthority

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let path = request.uri.path
        let isAPI = path.hasPrefix("/api/")
        guard isAPI || (path.hasPrefix("/console") && !path.hasPrefix("/console/assets/")),
            request.headers[.authorization] == nil,
            let session = try await authority.session(for: request)
        else { return try await next(request, context) }
        var context = context
        context.consoleSession = session
        if isAPI {
            if ![.get, .head, .options].contains(request.method),
                !ConsoleAuthority.matches(request.headers[ConsoleAuthority.csrfHeader], session.csrfToken)
            {
                throw APIError(
                    .forbidden, reason: "csrfTokenMissing",
                    "A call made with the console's session cookie must carry the session's CSRF token in X-Herald-CSRF: reload the console page, or use an API key."
                )
            }
            let key = ConsoleAuthority.apiKey(of: session)
            context.apiKey = key
            context.logger[metadataKey: LogKey.apiKey] = "console session (\(key.name))"
        }
        return try await next(request, context)
    }
}
