import Foundation
import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// A person's notification preferences (docs/preferences.md):
/// - `GET` and `PUT /api/preferences/{token}`: the app, proving it holds the token, with its registration key, like
///   `POST /api/token`;
/// - `GET` and `PUT /api/devices/{token}/preferences`: an admin (API key with the `admin` scope), for support.
///
/// Both read and change the choices of the token's subject: its user, else its installation, else the token itself.
struct PreferenceController: Sendable {
    let store: any Store
    let apps: AppDirectory
    let rateLimiter: RateLimiter?
    let preferences: PreferenceChanges

    /// The body's fields: category choices, and the person's own quiet hours.
    private static let fields: Set<String> = ["categories", "quietHours"]

    /// - Parameters:
    ///   - router: The app's routes (a registration key's).
    ///   - admin: The routes of the `admin` scope, behind its key check.
    func addRoutes(to router: Router<ServerRequestContext>, admin: RouterGroup<ServerRequestContext>) {
        router.get("/api/preferences/{token}") { try await show($0, context: $1, asAdmin: false) }
        router.put("/api/preferences/{token}") { try await update($0, context: $1, asAdmin: false) }
        admin.get("/api/devices/{token}/preferences") { try await show($0, context: $1, asAdmin: true) }
        admin.put("/api/devices/{token}/preferences") { try await update($0, context: $1, asAdmin: true) }
    }

    private func show(_ request: Request, context: ServerRequestContext, asAdmin: Bool) async throws -> Response {
        let (device, app) = try await asAdmin ? device(request, context: context) : deviceForApp(request, context: context)
        try Self.checkVisible(device, asAdmin: asAdmin, context: context)
        return .json(try await answer(device, app: app))
    }

    private func update(_ request: Request, context: ServerRequestContext, asAdmin: Bool) async throws -> Response {
        let (device, app) = try await asAdmin ? device(request, context: context) : deviceForApp(request, context: context)
        try Self.checkVisible(device, asAdmin: asAdmin, context: context)
        return .json(try await update(device, app: app, request: request, context: context, asAdmin: asAdmin))
    }

    /// A key limited to other apps or another environment finds the device as unknown as a missing one.
    private static func checkVisible(_ device: DeviceRegistration, asAdmin: Bool, context: ServerRequestContext)
        throws(APIError)
    {
        guard asAdmin, !context.access.sees(app: device.topic) || !context.access.sees(environment: device.environment)
        else { return }
        throw APIError(.notFound, reason: "unknownToken", "This token is not registered.")
    }

    /// The device of the path's token, admitted by the rate limit and the app's registration key.
    private func deviceForApp(_ request: Request, context: ServerRequestContext) async throws
        -> (DeviceRegistration, AppDirectory.App)
    {
        try rateLimiter?.admit(context.remoteAddress?.ipAddress ?? "local")
        let allowed = try apps.topicsAllowed(byRegistrationKey: request.headers[.registrationKey])
        // Another app's token is as unknown as an unregistered one.
        return try await device(request, context: context, visible: allowed.opens)
    }

    private func device(
        _ request: Request, context: ServerRequestContext, visible: (String) -> Bool = { _ in true }
    ) async throws -> (DeviceRegistration, AppDirectory.App) {
        let token = try RegistrationBody.parseToken(context.parameters.get("token") ?? "")
        guard let device = try await store.device(token), device.isActive, visible(device.topic) else {
            throw APIError(
                .notFound, reason: "unknownToken",
                "This token is not registered: register it (POST /api/token) before setting its preferences.")
        }
        return (device, try apps.app(named: device.topic))
    }

    private func update(
        _ device: DeviceRegistration, app: AppDirectory.App, request: Request, context: ServerRequestContext,
        asAdmin: Bool
    ) async throws -> JSONValue {
        let body = try await RequestFields.read(
            request, limit: ServerConfiguration.Limits.registrationBodyBytes, allowed: Self.fields)
        let quietHours = try Self.quietHoursChange(body, app: app)
        let members = try body.object("categories")
        guard members != nil || quietHours != .keep else {
            throw APIError.invalidField(
                "categories", "give the categories to change, such as {\"marketing\": false}, or quietHours")
        }
        let change = PreferenceChanges.Change(choices: try Self.choices(members ?? [:], app: app), quietHours: quietHours)
        // An app changing its own user's choices is that user's doing; an admin changing them is an operator's.
        try await preferences.apply(
            change, topic: app.bundleID, subject: PreferenceSubject(of: device.registration), by: context.caller,
            audited: asAdmin, auditSubject: device.token.redacted)
        return try await answer(device, app: app)
    }

    /// The body's `quietHours`: absent keeps the person's window, `null` goes back to the app's, `HH:MM-HH:MM` sets
    /// their own and `off` none. Only an app with quiet hours of its own lets its people choose theirs.
    private static func quietHoursChange(_ body: JSONFields, app: AppDirectory.App) throws(APIError)
        -> OwnQuietHoursChange
    {
        guard let value = body.members["quietHours"] else { return .keep }
        guard let appWindow = app.quietHours else {
            throw APIError.invalidField(
                "quietHours",
                "\(app.bundleID) has no quiet hours (HERALD_QUIET_HOURS or the app's quietHours), so its people cannot "
                    + "choose their own")
        }
        switch value {
        case .null:
            return .appWindow
        case .string(let text):
            if let own = OwnQuietHours(text) { return .own(own) }
        default:
            break
        }
        throw APIError.invalidField(
            "quietHours",
            "use HH:MM-HH:MM with a different start and end (such as 23:00-07:00), \"off\" for none, or null for the "
                + "app's window (\(appWindow))")
    }

    /// Each named category on, off, or back to its default (`null`); mandatory ones cannot be turned off.
    private static func choices(_ members: [String: JSONValue], app: AppDirectory.App) throws(APIError)
        -> [String: Bool?]
    {
        var choices: [String: Bool?] = [:]
        for name in members.keys.sorted() {
            let field = "categories.\(name)"
            guard let category = app.preferenceCategories.named(name) else {
                let declared = app.preferenceCategories.map(\.name)
                throw APIError.invalidField(
                    field,
                    declared.isEmpty
                        ? "\(app.bundleID) declares no preference categories"
                        : "\(app.bundleID) has no such category: use \(declared.joined(separator: ", "))")
            }
            let choice: Bool?
            switch members[name] {
            case .bool(let enabled): choice = enabled
            case .null: choice = nil
            default: throw APIError.invalidField(field, "use true, false, or null for the app's default")
            }
            if category.mode == .mandatory {
                guard choice != false else {
                    throw APIError.invalidField(field, "\(name) is mandatory: it cannot be turned off")
                }
                continue
            }
            choices[name] = .some(choice)
        }
        return choices
    }

    /// Every category of the app, in declared order, with what applies to this device's subject.
    private func answer(_ device: DeviceRegistration, app: AppDirectory.App) async throws -> JSONValue {
        let subject = PreferenceSubject(of: device.registration)
        let stored = try await store.preferences(topic: app.bundleID, subject: subject)
        let categories = app.preferenceCategories.map { category -> JSONValue in
            let chosen = category.mode == .mandatory ? nil : stored.choices[category.name]
            return .object([
                "name": .string(category.name), "mode": .string(category.mode.rawValue),
                "enabled": .bool(chosen ?? category.enabledByDefault), "chosen": .bool(chosen != nil),
            ])
        }
        let subjectKind: String =
            switch subject {
            case .user: "user"
            case .installation: "installation"
            case .token: "token"
            }
        var members: [String: JSONValue] = [
            "topic": .string(app.bundleID), "subject": .string(subjectKind), "categories": .array(categories),
            "updatedAt": stored.updatedAt.map { .string(RFC3339.string($0)) } ?? .null,
        ]
        if let name = app.defaultPreferenceCategory { members["defaultCategory"] = .string(name) }
        if let appWindow = app.quietHours {
            let own = stored.quietHours
            let applies = own.map(\.window) ?? appWindow
            members["quietHours"] = .object([
                "window": applies.map { .string($0.description) } ?? .null, "chosen": .bool(own != nil),
                "own": own.map { .string($0.description) } ?? .null, "appWindow": .string(appWindow.description),
            ])
        } else {
            members["quietHours"] = .null
        }
        return .object(members)
    }
}
