import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// The console's *Devices* pages: lists by user, tag or token suffix, a device with its deliveries and its person's
/// preferences, its removal (an admin's), and the preferences form; read through ``VisibleResources``, the API's one
/// access check.
struct ConsoleDevicePages: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]
    /// The apps' preference categories, for a person's choices on the device page and the user view.
    let apps: AppDirectory
    /// The emulator's virtual devices, shown beside the registered ones when the server runs with it.
    let emulator: APNSEmulator?
    let clock: any WallClock
    let audit: AuditTrail
    let preferences: PreferenceChanges

    /// The one access check of the devices the pages show, shared with the API.
    var resources: VisibleResources { VisibleResources(store: store, apps: apps) }
    var devices: Devices { Devices(store: store, apps: apps, audit: audit) }

    func addRoutes(
        viewer: RouterGroup<ServerRequestContext>, operator: RouterGroup<ServerRequestContext>,
        admin: RouterGroup<ServerRequestContext>
    ) {
        viewer.get("/console/devices", use: devices)
        viewer.get("/console/devices/{token}", use: device)
        `operator`.post("/console/preferences", use: changePreferences)
        admin.post("/console/devices/{token}/remove", use: removeDevice)
    }

    // MARK: Devices

    @Sendable func devices(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let search = (try request.queryParameter("q") ?? "").trimmingCharacters(in: .whitespaces)
        let user = (try request.queryParameter("user") ?? "").trimmingCharacters(in: .whitespaces)
        let tag = (try request.queryParameter("tag") ?? "").trimmingCharacters(in: .whitespaces)
        let app = try chosenApp(request.queryParameter("app"), context)
        var data = DevicesView(q: search, user: user, tag: tag, apps: appChoices(app, context))
        if let removed = try request.queryParameter("removed") {
            data.notice = "Device …\(removed) removed: it gets no pushes until its app registers it again."
        }
        var found: [DeviceRegistration] = []
        var description: String
        let filtered = !search.isEmpty || !user.isEmpty || !tag.isEmpty
        if !search.isEmpty {
            let hex = search.lowercased().filter { !" <>".contains($0) }
            guard hex.count >= 4, hex.count <= 1024, hex.allSatisfy(\.isHexDigit) else {
                data.error = "Search a token by at least 4 of its hex digits, such as its last 8."
                return renderer.page("devices", title: "Devices", section: .devices, view: data, context: context)
            }
            let access = Self.access(context)
            found = try await store.devices(withTokenSuffix: hex, limit: 50).filter {
                access.sees(app: $0.topic) && access.sees(environment: $0.environment)
            }
            description = "Tokens ending in \(hex)"
        } else {
            var query: DeviceQuery
            if !user.isEmpty {
                query = .user(user)
                description = "Devices of user \(user)"
            } else if !tag.isEmpty {
                query = .tag(tag)
                description = "Devices tagged \(tag)"
            } else {
                query = .topic(app)
                description = "Devices of \(app)"
            }
            query = query.inTopic(app).includingInvalidated()
            if let environment = Self.access(context).environment { query = query.environment(environment) }
            var cursor: DeviceCursor?
            if let after = try request.queryParameter("after"), !after.isEmpty { cursor = DeviceCursor(after) }
            let page = try await store.devices(matching: query, after: cursor, limit: 50)
            found = page.devices
            if let next = page.next {
                data.next = Self.link(
                    "/console/devices", [("user", user), ("tag", tag), ("app", app), ("after", next.description)])
            }
        }
        if search.isEmpty, !user.isEmpty, !found.isEmpty {
            // The user view: the person's choices in the app, which hold on every device of theirs.
            data.userPreferences = try await preferenceSection(
                topic: app, subject: .user(user), returnTo: Self.link("/console/devices", [("user", user), ("app", app)]),
                context: context)
        }
        if try request.queryParameter("preferences") != nil { data.notice = "The preferences were saved." }
        data.description = description
        let reveal = Self.revealsTokens(context)
        data.rows = found.map { device in
            var row = DeviceRow(device)
            if !reveal { row.token = nil }
            return row
        }
        data.hasRows = !found.isEmpty
        if found.isEmpty {
            if filtered {
                data.searchedNothing = true
            } else {
                data.noDevices = true
                data.emptyDevices = emptyDevices(request)
            }
        }
        return renderer.page("devices", title: "Devices", section: .devices, view: data, context: context)
    }

    /// devices.mustache's values: a search or a list of devices, filled in as the page finds them.
    struct DevicesView: ConsoleView {
        let q: String
        let user: String
        let tag: String
        let apps: [ConsoleAppChoice]
        var notice: String?
        var error: String?
        var next: String?
        /// The person's choices, when the page lists one user's devices (preferences.mustache's values).
        var userPreferences: PreferencesView?
        var description: String?
        var rows: [DeviceRow] = []
        var hasRows = false
        var searchedNothing = false
        var noDevices = false
        /// empty-devices.mustache, rendered.
        var emptyDevices: String?
    }

    /// A registration as a table row.
    struct DeviceRow {
        /// The whole token; `nil` where the role sees only ``suffix`` (``revealsTokens(_:)``).
        var token: String?
        let suffix: String
        let topic: String
        let environment: String
        let kind: String
        let platform: String
        let user: String
        let tags: String
        let registeredAt: String
        let active: Bool
        /// A push-to-start token left out of sends because its starts started nothing (docs/live-activities.md).
        let stale: Bool

        init(_ device: DeviceRegistration) {
            let registration = device.registration
            token = registration.token.hex
            suffix = String(registration.token.hex.suffix(8))
            topic = registration.topic
            environment = registration.environment.name
            kind = registration.tokenKind.name
            platform = registration.platform?.name ?? "—"
            user = registration.userID ?? "—"
            tags = registration.tags.joined(separator: ", ")
            registeredAt = ConsoleController.display(device.registeredAt)
            active = device.isActive
            stale = device.staleSince != nil
        }
    }

    private func deviceToken(_ context: ServerRequestContext) throws -> DeviceToken {
        guard let hex = context.parameters.get("token"), let token = try? DeviceToken(hex: hex) else {
            throw APIError(.notFound, reason: "unknownToken", "There is no such device: search for it by token.")
        }
        return token
    }

    @Sendable func device(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let token = try deviceToken(context)
        let device = try await resources.device(token, for: Self.access(context))
        let deliveries = try await store.deliveries(to: token, limit: 50)
        let registration = device.registration
        var removals = deliveries.compactMap { delivery -> DeviceView.Removal? in
            guard delivery.outcome.action != nil else { return nil }
            return DeviceView.Removal(
                at: Self.display(delivery.outcome.at),
                what: "\(Self.detail(delivery.outcome)) (send to \(delivery.target))")
        }
        if let invalidation = device.invalidation {
            removals.insert(
                DeviceView.Removal(
                    at: Self.display(invalidation.recordedAt),
                    what: "removed from sends after APNs answered \(invalidation.reason.rawValue)"
                        + (invalidation.apnsTimestamp.map { " (APNs timestamp \(Self.display($0)))" } ?? "")),
                at: 0)
        }
        if let stale = device.staleSince {
            removals.insert(
                DeviceView.Removal(
                    at: Self.display(stale),
                    what: "left out of sends: its push-to-starts started nothing several times in a row; a new "
                        + "push-to-start token from the app brings the device back"),
                at: 0)
        }
        var preferences: PreferencesView?
        if device.isActive {
            preferences = try await preferenceSection(
                topic: device.topic, subject: PreferenceSubject(of: registration),
                returnTo: "/console/devices/\(token.hex)", context: context)
        }
        let saved = try request.queryParameter("preferences") != nil
        let view = DeviceView(
            row: DeviceRow(device), languages: registration.preferredLanguages.joined(separator: ", "),
            appVersion: registration.appVersion ?? "—", installation: registration.installationID?.lowercasedText ?? "—",
            pushService: registration.webPush?.audience, createdAt: Self.display(device.createdAt),
            deliveries: deliveries.map { delivery in
                DeviceView.Delivery(
                    at: Self.display(delivery.outcome.at), sendID: delivery.sendID.description,
                    target: delivery.target, summary: delivery.summary, status: delivery.outcome.result.kind,
                    detail: Self.detail(delivery.outcome))
            },
            hasDeliveries: !deliveries.isEmpty, removals: removals, hasRemovals: !removals.isEmpty,
            preferences: preferences, notice: saved ? "The preferences were saved." : nil)
        return renderer.page(
            "device", title: "Device …\(token.hex.suffix(8))", section: .devices, view: view, context: context)
    }

    /// device.mustache's values: the registration's row, and more.
    struct DeviceView: ConsoleView, ComposedView {
        struct Delivery {
            let at: String
            let sendID: String
            let target: String
            let summary: String
            let status: String
            let detail: String
        }

        /// When and why the device was taken out of sends.
        struct Removal {
            let at: String
            let what: String
        }

        let row: DeviceRow
        let languages: String
        let appVersion: String
        let installation: String
        /// A web subscription's push service (`https://web.push.apple.com`); `nil` for an APNs token.
        let pushService: String?
        let createdAt: String
        let deliveries: [Delivery]
        let hasDeliveries: Bool
        let removals: [Removal]
        let hasRemovals: Bool
        /// The device's person's choices (preferences.mustache's values), while the device is active.
        let preferences: PreferencesView?
        let notice: String?

        var parts: [Any] { [row] }
    }

    @Sendable func removeDevice(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        let token = try deviceToken(context)
        try await devices.remove(token, by: context.caller)
        return Self.redirect("/console/devices?removed=\(token.hex.suffix(8))")
    }
}
