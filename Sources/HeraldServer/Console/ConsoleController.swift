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
/// Every page reads through the ``HeraldStore/Store`` interface with bounded, paged queries. Pages that change
/// something are forms posted with the session's CSRF token (``ConsoleForm``); the compose page and a send's
/// progress call the API itself with the session cookie and `X-Herald-CSRF` (``APIKeyAuthenticator``).
struct ConsoleController: Sendable {
    let store: any Store
    /// Told of revocations, so a revoked key stops working at once.
    let keys: APIKeyVerifier
    let authority: ConsoleAuthority
    let renderer: ConsoleRenderer
    /// The apps' bundle ids, in configuration order.
    let appIDs: [String]
    let emulator: APNSEmulator?
    /// Cancels sends, so a send this instance performs stops at once.
    let engine: SendEngine
    /// The APNs clients' latency and open connections, read when the overview renders.
    let apnsStatistics: @Sendable () -> [SenderStatistics]
    let clock: any WallClock
    /// The overview's device counts, recounted in the background once counting is slow.
    let deviceFigures: DeviceFigures
    /// Ends activities as `DELETE /api/activities/{id}` does, and counts their update tokens.
    let activities: ActivityOperations
    /// Creates and deletes channels as `/api/channels` does.
    let channels: ChannelOperations
    let webhooks: WebhookEndpoints
    let apiKeys: APIKeys
    /// Ended sends' outcome groups, counted once.
    let endedSendGroups = EndedSendGroups()
    /// `herald doctor`'s checks as the server ran them at start; `nil` until they have run.
    var deploymentChecks: @Sendable () -> DeploymentReport? = { nil }
    /// Records each change the console makes, and each sign-in and sign-out.
    let audit: AuditTrail
    /// The apps' preference categories, for a person's choices on the device page and the user view.
    var apps = AppDirectory([])

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
        viewerPages.get("/console", use: overview)
        viewerPages.get("/console/sends", use: sends)
        viewerPages.get("/console/sends/{id}", use: send)
        viewerPages.get("/console/sends/{id}/devices/{token}", use: delivery)
        viewerPages.get("/console/devices", use: devices)
        viewerPages.get("/console/devices/{token}", use: device)
        viewerPages.get("/console/activities", use: activities)
        viewerPages.get("/console/channels", use: channels)
        viewerPages.get("/console/emulator", use: emulatorInboxes)

        let operatorPages = pages(.operator)
        operatorPages.get("/console/compose", use: compose)
        operatorPages.post("/console/sends/{id}/cancel", use: cancelSend)
        operatorPages.post("/console/activities/end", use: endActivity)
        operatorPages.post("/console/channels", use: createChannel)
        operatorPages.post("/console/channels/delete", use: deleteChannel)
        operatorPages.post("/console/preferences", use: changePreferences)

        let adminPages = pages(.admin)
        adminPages.post("/console/devices/{token}/remove", use: removeDevice)
        adminPages.get("/console/keys", use: keys)
        adminPages.post("/console/keys", use: createKey)
        adminPages.post("/console/keys/{id}/revoke", use: revokeKey)
        adminPages.get("/console/audit", use: audit)
        addWebhookRoutes(to: adminPages)
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

    // MARK: Helpers

    /// The session of a page behind ``ConsoleSessionMiddleware`` with a role: the middleware sent a request without
    /// one to the sign-in page, so this throws only for a route added outside those groups.
    /// - Throws: ``APIError`` `401 consoleSignInRequired`.
    static func session(_ context: ServerRequestContext) throws(APIError) -> ConsoleSession {
        guard let session = context.consoleSession else {
            throw APIError(
                .unauthorized, reason: "consoleSignInRequired", "This page needs a console session: sign in at /console/sign-in.")
        }
        return session
    }

    /// Refuses a console request the session's role may not make (docs/security.md, "The console").
    /// - Throws: ``APIError`` `403 consoleRoleTooLow`, shown as the console's error page.
    static func require(_ role: ConsoleRole, _ session: ConsoleSession) throws(APIError) {
        let actual = ConsoleRole(session)
        guard actual < role else { return }
        throw APIError(
            .forbidden, reason: "consoleRoleTooLow",
            "You are signed in as a \(actual.rawValue), and this needs an \(role.rawValue): sign in with a key that has the \(role == .admin ? "admin" : "send") scope."
        )
    }

    /// `303 See Other` to a path of the console.
    static func redirect(_ path: String) -> Response {
        Response(status: .seeOther, headers: [.location: path, .cacheControl: "no-store"])
    }

    /// The rate limit's key for a client: its address.
    static func client(_ context: ServerRequestContext) -> String {
        context.remoteAddress?.ipAddress ?? "local"
    }

    /// A time as pages show it: `2026-01-01 09:41:00 UTC`.
    static func display(_ date: Date?) -> String {
        guard let date else { return "" }
        let text = date.formatted(.iso8601)
        return text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
    }

    /// The curl line an app's registration amounts to, with the host the browser used.
    static func registrationExample(_ request: Request) -> String {
        let scheme = ConsoleAuthority.isSecure(request) ? "https" : "http"
        let host = request.head.authority ?? "127.0.0.1:8080"
        return """
            curl -X POST \(scheme)://\(host)/api/token -H 'Content-Type: application/json' \\
              -d '{"token": "00070e151c232a31383f464d545b626970777e858c939aa1a8afb6bdc4cbd2d9", "debug": true, "userId": "alice"}'
            """
    }

    /// A console path with a query, each value percent-encoded (base64's `+`, `/` and `=` too); empty values are
    /// left out.
    static func link(_ path: String, _ items: [(name: String, value: String)]) -> String {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        let query = items.filter { !$0.value.isEmpty }.map { item in
            "\(item.name)=\(item.value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")"
        }
        return query.isEmpty ? path : path + "?" + query.joined(separator: "&")
    }

    /// The app a page shows: the one asked for when this server serves it, else the first.
    func chosenApp(_ asked: String?, _ context: ServerRequestContext) -> String {
        let apps = visibleApps(context)
        return asked.flatMap { apps.contains($0) ? $0 : nil } ?? apps.first ?? ""
    }

    /// The app picker's options, with the shown app selected.
    func appChoices(_ app: String, _ context: ServerRequestContext) -> [AppChoice] {
        visibleApps(context).map { AppChoice(name: $0, selected: $0 == app) }
    }

    /// An option of an app picker.
    struct AppChoice {
        let name: String
        let selected: Bool
    }

    /// What the session's key may see: its apps and environment (``KeyAccess``); everything for the one-time link.
    static func access(_ context: ServerRequestContext) -> KeyAccess { KeyAccess(key: context.consoleSession?.apiKey) }

    /// The one access check of the sends, devices and traces the pages show, shared with the API.
    var resources: VisibleResources { VisibleResources(store: store, apps: apps) }

    /// A send id that is not one: as unknown as a send the session does not see.
    static let noSuchSend = APIError(
        .notFound, reason: "unknownSend", "There is no such send: pick one from the list of sends.")

    /// The apps the session sees, in configuration order: a session of a key limited to apps sees only those, on
    /// every page (docs/security.md, "The console").
    func visibleApps(_ context: ServerRequestContext) -> [String] {
        let access = Self.access(context)
        return appIDs.filter { access.sees(app: $0) }
    }

    /// Whether the session is limited to some apps or an environment.
    static func isScoped(_ context: ServerRequestContext) -> Bool {
        access(context).topics != nil || access(context).environment != nil
    }

    /// The empty state of the device lists.
    func emptyDevices(_ request: Request) -> String {
        renderer.fragment("empty-devices", EmptyDevicesView(curl: Self.registrationExample(request)))
    }

    /// empty-devices.mustache's values.
    struct EmptyDevicesView: ConsoleView {
        let curl: String
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
