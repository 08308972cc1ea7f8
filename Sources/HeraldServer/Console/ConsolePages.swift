import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird

/// What each page controller of the console has and shares: the renderer, the apps, and the helpers every page uses
/// (its session, what the session sees, links, dates). Each controller holds only the dependencies of its own pages.
protocol ConsolePages: Sendable {
    var renderer: ConsoleRenderer { get }
    /// The apps' bundle ids, in configuration order.
    var appIDs: [String] { get }
}

extension ConsolePages {

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
    func appChoices(_ app: String, _ context: ServerRequestContext) -> [ConsoleAppChoice] {
        visibleApps(context).map { ConsoleAppChoice(name: $0, selected: $0 == app) }
    }

    /// What the session's key may see: its apps and environment (``KeyAccess``); everything for the one-time link.
    static func access(_ context: ServerRequestContext) -> KeyAccess { Caller.access(of: context) }

    /// A send id that is not one: as unknown as a send the session does not see.
    static var noSuchSend: APIError {
        APIError(.notFound, reason: "unknownSend", "There is no such send: pick one from the list of sends.")
    }

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

    /// What the rules about the person removed or deferred, in words; empty when none applied.
    static func suppressedText(_ counts: SuppressedCounts) -> String {
        var parts: [String] = []
        if counts.preference > 0 { parts.append("\(counts.preference) opted out of the category") }
        if counts.frequencyCap > 0 { parts.append("\(counts.frequencyCap) over a frequency cap") }
        if counts.quietHoursDropped > 0 { parts.append("\(counts.quietHoursDropped) dropped in their quiet hours") }
        if counts.quietHoursDeferred > 0 {
            parts.append("\(counts.quietHoursDeferred) deferred to the end of their quiet hours")
        }
        if counts.activitiesDisabled > 0 {
            parts.append("\(counts.activitiesDisabled) with the app's Live Activities turned off")
        }
        return parts.isEmpty ? "" : "Rules: " + parts.joined(separator: ", ") + "."
    }

    static func describe(_ action: DeliveryOutcome.Action) -> String {
        switch action {
        case .removed: "token removed from sends"
        case .kept: "token kept (registered again after APNs's answer)"
        case .environmentCorrected: "environment corrected"
        }
    }

    /// An outcome's detail in words: the apns-id, the reason and what Herald did, or the failure.
    static func detail(_ outcome: DeliveryOutcome) -> String {
        var text: String
        switch outcome.result {
        case .accepted(let apnsID): text = "apns-id \(apnsID.headerValue)"
        case .rejected(let status, let reason, _): text = "\(status) \(reason.rawValue)"
        case .failed(let message): text = message
        }
        if let action = outcome.action { text += "; " + describe(action) }
        return text
    }

    /// Whether the session's pages show whole device tokens (and link to device and delivery pages by them): not to
    /// a viewer, who sees `…` and the last 8 hex digits, as a read-only API key does (docs/security.md).
    static func revealsTokens(_ context: ServerRequestContext) -> Bool {
        context.consoleSession.map { ConsoleRole($0) > .viewer } ?? false
    }

    /// The empty state of the device lists.
    func emptyDevices(_ request: Request) -> String {
        renderer.fragment("empty-devices", EmptyDevicesView(curl: Self.registrationExample(request)))
    }
}

/// An option of an app picker.
struct ConsoleAppChoice {
    let name: String
    let selected: Bool
}

/// An option of a select.
struct ConsoleOption {
    let value: String
    let label: String
    let selected: Bool
}

/// empty-devices.mustache's values.
struct EmptyDevicesView: ConsoleView {
    let curl: String
}
