import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird

extension PreferenceSubject {
    /// The subject a stored key names (``PreferenceSubject/key``): what the console's forms carry.
    init?(key: String) {
        let value = String(key.dropFirst(2))
        switch key.prefix(2) {
        case "u:" where !value.isEmpty: self = .user(value)
        case "i:": guard let id = UUID(uuidString: value) else { return nil }; self = .installation(id)
        case "t:": guard let token = try? DeviceToken(hex: value) else { return nil }; self = .token(token)
        default: return nil
        }
    }

    /// Whose choices, in words for a page.
    var consoleLabel: String {
        switch self {
        case .user(let user): "user \(user), on all their devices"
        case .installation(let id): "installation \(id.lowercasedText)"
        case .token: "this token alone (no user, no installation)"
        }
    }
}

/// A person's notification choices on the device page and the user view: every category the app declares, what
/// applies and why; operators and admins change them (`POST /console/preferences`), viewers read them.
extension ConsoleDevicePages {
    /// The values of the `preferences` partial for a subject of an app; `nil` when the app declares no categories and
    /// no quiet hours.
    func preferenceSection(
        topic: String, subject: PreferenceSubject, returnTo: String, context: ServerRequestContext
    ) async throws -> PreferencesView? {
        guard let app = apps.apps[topic], !app.preferenceCategories.isEmpty || app.quietHours != nil else { return nil }
        let stored = try await store.preferences(topic: topic, subject: subject)
        let categories = app.preferenceCategories.map { category in
            let chosen = category.mode == .mandatory ? nil : stored.choices[category.name]
            let enabled = chosen ?? category.enabledByDefault
            return PreferencesView.Category(
                name: category.name, mandatory: category.mode == .mandatory,
                mode: category.mode == .mandatory
                    ? "mandatory" : category.enabledByDefault ? "on by default" : "off by default",
                isDefaultCategory: app.defaultPreferenceCategory == category.name,
                enabled: enabled, chosen: chosen != nil,
                selectedDefault: chosen == nil, selectedOn: chosen == true, selectedOff: chosen == false)
        }
        let canChange = context.consoleSession.map { ConsoleRole($0) >= .operator } ?? false
        let own = stored.quietHours
        let quiet = app.quietHours.map { appWindow in
            PreferencesView.Quiet(
                appWindow: appWindow.description, chosen: own != nil, own: own?.description ?? "",
                applies: own.map { $0.window?.description ?? "none" } ?? appWindow.description)
        }
        return PreferencesView(
            prefTopic: topic, prefSubject: subject.key, prefSubjectLabel: subject.consoleLabel,
            prefCategories: categories, prefCanChange: canChange, prefReturn: returnTo,
            prefUpdatedAt: stored.updatedAt.map(Self.display) ?? "never", prefHasCategories: !categories.isEmpty,
            prefQuiet: quiet)
    }

    /// preferences.mustache's values. Its keys start with `pref`: the partial is inside the device pages, whose own
    /// keys it must not shadow.
    struct PreferencesView {
        struct Category {
            let name: String
            let mandatory: Bool
            /// The category's mode in words.
            let mode: String
            let isDefaultCategory: Bool
            /// Whether it applies: the person's choice, else the category's default.
            let enabled: Bool
            /// Whether the person chose.
            let chosen: Bool
            let selectedDefault: Bool
            let selectedOn: Bool
            let selectedOff: Bool
        }

        /// The quiet hours that apply to the person, when the app has a window: the app's, or their own.
        struct Quiet {
            let appWindow: String
            /// Whether the person chose a window of their own (or none).
            let chosen: Bool
            /// Their own choice as typed: a window, `off`, or empty for the app's.
            let own: String
            /// The window that applies, or `none`.
            let applies: String
        }

        let prefTopic: String
        let prefSubject: String
        let prefSubjectLabel: String
        let prefCategories: [Category]
        let prefCanChange: Bool
        let prefReturn: String
        let prefUpdatedAt: String
        let prefHasCategories: Bool
        let prefQuiet: Quiet?
    }

    @Sendable func changePreferences(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        let form = try await ConsoleForm.read(request, session: session)
        guard let topic = form["topic"], Self.access(context).sees(app: topic), let app = apps.apps[topic] else {
            throw APIError(.notFound, reason: "unknownTopic", "This server sends for no such app: reload the page.")
        }
        guard let subject = form["subject"].flatMap(PreferenceSubject.init(key:)) else {
            throw APIError.invalidField("subject", "the form names no person: reload the page")
        }
        var choices: [String: Bool?] = [:]
        for category in app.preferenceCategories where category.mode != .mandatory {
            switch form["category.\(category.name)"] {
            case nil: continue
            case "default": choices[category.name] = .some(nil)
            case "on": choices[category.name] = true
            case "off": choices[category.name] = false
            case let other?:
                throw APIError.invalidField(
                    "category.\(category.name)", "\"\(other)\" is not a choice: use default, on or off")
            }
        }
        let quietHours = try await quietHoursChange(form["quietHours"], app: app, topic: topic, subject: subject)
        try await preferences.apply(
            PreferenceChanges.Change(choices: choices, quietHours: quietHours), topic: topic, subject: subject,
            by: context.caller, audited: true, auditSubject: "\(subject)")
        let back = form["return"].flatMap { $0.hasPrefix("/console/") ? $0 : nil } ?? "/console/devices"
        return Self.redirect(back + (back.contains("?") ? "&" : "?") + "preferences=saved")
    }

    /// The form's own quiet hours: empty for the app's window, `off` for none, or `HH:MM-HH:MM`; kept when the form has
    /// no such field (an app without quiet hours) or names the window the person already has.
    private func quietHoursChange(
        _ text: String?, app: AppDirectory.App, topic: String, subject: PreferenceSubject
    ) async throws -> OwnQuietHoursChange {
        guard let text = text?.trimmingCharacters(in: .whitespaces), app.quietHours != nil else { return .keep }
        let current = try await store.preferences(topic: topic, subject: subject).quietHours
        if text.isEmpty { return current == nil ? .keep : .appWindow }
        guard let own = OwnQuietHours(text) else {
            throw APIError.invalidField(
                "quietHours", "\"\(text)\" is not a window: use HH:MM-HH:MM such as 23:00-07:00, off for none, or "
                    + "leave it empty for the app's")
        }
        return own == current ? .keep : .own(own)
    }
}
