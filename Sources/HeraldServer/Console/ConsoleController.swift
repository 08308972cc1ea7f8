import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// The web console under `/console`: server-rendered pages over the store, signed in with an `admin` API key or the
/// one-time link a fresh server prints (docs/console.md).
///
/// This controller signs in and out and puts the routes together; each section's pages are a controller of their own
/// with the dependencies they use (``ConsoleOverviewPages``, ``ConsoleSendPages``, ``ConsoleDevicePages``,
/// ``ConsoleActivityPages``, ``ConsoleKeyPages``, ``ConsoleAuditPage``, ``ConsoleWebhookPages``), and what changes
/// something goes through the use cases the API calls. Every page reads through the ``HeraldStore/Store`` interface
/// with bounded, paged queries. Pages that change something are forms posted with the session's CSRF token
/// (``ConsoleForm``); the compose page and a send's progress call the API itself with the session cookie and
/// `X-Herald-CSRF` (``APIKeyAuthenticator``).
struct ConsoleController: ConsolePages {
    let store: any Store
    /// Records a key that tries to sign in after it expired.
    let keys: APIKeyVerifier
    let authority: ConsoleAuthority
    let renderer: ConsoleRenderer
    /// The apps' bundle ids, in configuration order.
    let appIDs: [String]
    let clock: any WallClock
    /// The pages of each section, each with the dependencies of its own pages.
    let overviewPages: ConsoleOverviewPages
    let sendPages: ConsoleSendPages
    let devicePages: ConsoleDevicePages
    let activityPages: ConsoleActivityPages
    let keyPages: ConsoleKeyPages
    let auditPage: ConsoleAuditPage
    let webhookPages: ConsoleWebhookPages
    /// Records each change the console makes, and each sign-in and sign-out.
    let audit: AuditTrail

    /// The console's routes, in one group with its security headers and HTML errors; every page but the assets
    /// finds the session (``ConsoleSessionMiddleware``), and each page's group is kept to the roles that may see it,
    /// so a handler finds a signed-in session of a sufficient role in ``session(_:)``.
    func addRoutes(to router: Router<ServerRequestContext>) {
        // Browsers ask for it on any page without an icon link (the JSON answers, /metrics): not a 404 in their console.
        router.get("/favicon.ico", use: favicon)
        let console = router.group().add(middleware: ConsoleSecurityMiddleware(renderer: renderer))
        console.get("/console/assets/{name}", use: asset)
        func pages(_ role: ConsoleRole?) -> RouterGroup<ServerRequestContext> {
            console.group().add(middleware: ConsoleSessionMiddleware(authority: authority, role: role))
        }
        let signInPages = pages(nil)
        signInPages.get("/console/sign-in", use: signInForm)
        signInPages.post("/console/sign-in", use: signIn)
        signInPages.get("/console/sign-in/{token}", use: signInWithLink)

        let viewerPages = pages(.viewer)
        viewerPages.post("/console/sign-out", use: signOut)

        let operatorPages = pages(.operator)

        let adminPages = pages(.admin)
        overviewPages.addRoutes(to: viewerPages)
        sendPages.addRoutes(viewer: viewerPages, operator: operatorPages)
        devicePages.addRoutes(viewer: viewerPages, operator: operatorPages, admin: adminPages)
        activityPages.addRoutes(viewer: viewerPages, operator: operatorPages)
        keyPages.addRoutes(to: adminPages)
        adminPages.get("/console/audit", use: auditPage.audit)
        webhookPages.addRoutes(to: adminPages)
    }

    // MARK: Assets

    @Sendable func asset(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let name = context.parameters.get("name"), let response = renderer.asset(name) else {
            throw HTTPError(.notFound)
        }
        return response
    }

    @Sendable func favicon(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let response = renderer.asset("favicon.svg") else { throw HTTPError(.notFound) }
        return response
    }

    // MARK: Sign-in

    @Sendable func signInForm(_ request: Request, context: ServerRequestContext) async throws -> Response {
        // No redirect when a session cookie is present: a planted session must not capture the person signing in.
        signInPage(error: nil, status: .ok, request: request, context: context)
    }

    private func signInPage(
        error: String?, status: HTTPResponse.Status, request: Request, context: ServerRequestContext
    ) -> Response {
        let token = ConsoleAuthority.randomToken()
        var headers = HTTPFields()
        headers[.setCookie] =
            "\(ConsoleAuthority.signInCookie)=\(token); Path=/console/sign-in; HttpOnly; SameSite=Strict"
            + (ConsoleAuthority.isSecure(request) ? "; Secure" : "")
        return renderer.page(
            "sign-in", title: "Sign in", section: nil, view: SignInView(formToken: token, error: error),
            context: context, status: status, headers: headers)
    }

    /// sign-in.mustache's values.
    struct SignInView: ConsoleView {
        /// The form's double-submit CSRF token, also in the sign-in cookie.
        let formToken: String
        let error: String?
    }

    @Sendable func signIn(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try authority.limiter.admit(Self.client(context))
        let form = try await ConsoleForm.read(request)
        guard let cookie = ConsoleAuthority.cookie(ConsoleAuthority.signInCookie, in: request),
            ConsoleAuthority.matches(form[ConsoleAuthority.csrfField], cookie)
        else {
            throw ConsoleForm.csrfRefused
        }
        let secret = (form["key"] ?? "").trimmingCharacters(in: .whitespaces)
        let found = secret.isEmpty || secret.utf8.count > 512 ? nil : try await store.apiKey(forSecret: secret)
        if let found, found.isActive, found.isExpired(at: clock.now()) { await keys.recordExpiry(of: found, context) }
        guard let key = found, ConsoleRole.signsIn(key), key.isUsable(at: clock.now()) else {
            context.logger.notice("Console sign-in refused", metadata: [LogKey.path: "/console/sign-in"])
            return signInPage(
                error:
                    "That key is unknown, revoked, expired, or has none of the admin, send or read scopes: use a key made with herald keys create <name> --scope admin (or send, or read).",
                status: .unauthorized, request: request, context: context)
        }
        let cookieValue = try await authority.open(for: key, replacing: request)
        context.logger.info("Console sign-in", metadata: [LogKey.apiKey: "\(key.name) \(key.prefix)…"])
        await audit.record(
            AuditEntry(
                at: clock.now(), actor: AuditActor(kind: .console, keyID: key.id, name: key.name),
                address: AuditTrail.address(context), action: .signedIn, subject: key.id.lowercasedText,
                detail: "with the key \(key.name) (\(key.prefix)…)"),
            logger: context.logger)
        var response = Self.redirect("/console")
        response.headers.append(HTTPField(name: .setCookie, value: cookieValue))
        response.headers.append(
            HTTPField(
                name: .setCookie,
                value: "\(ConsoleAuthority.signInCookie)=; Path=/console/sign-in; Max-Age=0; HttpOnly; SameSite=Strict"))
        return response
    }

    @Sendable func signInWithLink(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try authority.limiter.admit(Self.client(context))
        guard try await authority.consumeSignInLink(context.parameters.get("token") ?? "") else {
            context.logger.notice("Console sign-in link refused: used, expired or unknown")
            return signInPage(
                error:
                    "This sign-in link was used already or has expired: sign in with an admin API key (herald keys create <name> --scope admin), or restart herald serve for a new link while no admin key exists.",
                status: .unauthorized, request: request, context: context)
        }
        let cookieValue = try await authority.open(for: nil, replacing: request)
        context.logger.notice("Console sign-in with the one-time link")
        await audit.record(
            AuditEntry(
                at: clock.now(), actor: AuditActor(kind: .console, keyID: nil, name: "one-time link"),
                address: AuditTrail.address(context), action: .signedIn, detail: "with the one-time link"),
            logger: context.logger)
        var response = Self.redirect("/console")
        response.headers.append(HTTPField(name: .setCookie, value: cookieValue))
        return response
    }

    @Sendable func signOut(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        let cookieValue = try await authority.close(request)
        await audit.record(.signedOut, context)
        var response = Self.redirect("/console/sign-in")
        response.headers.append(HTTPField(name: .setCookie, value: cookieValue))
        return response
    }

}

/// A form posted by a console page: URL-encoded fields, checked for the session's CSRF token.
struct ConsoleForm {
    private let fields: [(name: String, value: String)]

    /// The largest form a console page posts.
    static let maximumBytes = 16 * 1024

    static let csrfRefused = APIError(
        .forbidden, reason: "csrfTokenMissing",
        "This form was not sent by a console page of your session, or the page is out of date: reload it and try again.")

    /// Reads the body; with a session, refuses it (`403 csrfTokenMissing`) unless it carries the session's token.
    static func read(_ request: Request, session: ConsoleSession? = nil) async throws -> ConsoleForm {
        let bytes = try await request.bodyBytes(limit: maximumBytes)
        let form = ConsoleForm(urlEncoded: String(decoding: bytes, as: UTF8.self))
        if let session, !ConsoleAuthority.matches(form[ConsoleAuthority.csrfField], session.csrfToken) {
            throw csrfRefused
        }
        return form
    }

    init(urlEncoded text: String) {
        fields = text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                let spaced = part.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// The first value of a field.
    subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of a field (checkboxes).
    func all(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
}
