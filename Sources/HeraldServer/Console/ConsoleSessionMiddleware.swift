import HTTPTypes
import HeraldStore
import Hummingbird

/// Finds the console session of a request to a console page (its cookie, and no `Authorization` header), puts it in
/// ``ServerRequestContext/consoleSession``, and keeps a group of pages to the sessions whose role may see them.
///
/// It is attached to the console's route groups only (``ConsoleController/addRoutes(to:)``): API calls made with the
/// session cookie are authenticated by ``APIKeyAuthenticator``, so no other request pays for the cookie lookup.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let authority: ConsoleAuthority
    /// The least role the group's pages need: a request without a session is sent to the sign-in page, one of a
    /// lower role gets `403 consoleRoleTooLow`. `nil` for the sign-in pages, which anyone may see.
    let role: ConsoleRole?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        if request.headers[.authorization] == nil { context.consoleSession = try await authority.session(for: request) }
        if let role {
            guard let session = context.consoleSession else { return ConsoleController.redirect("/console/sign-in") }
            try ConsoleController.require(role, session)
        }
        return try await next(request, context)
    }
}
