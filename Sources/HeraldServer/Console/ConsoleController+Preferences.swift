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
extension ConsoleController {
    /// The values of the `preferences` partial for a subject of an app; `nil` when the app declares no categories.
    func preferenceSection(
        topic: String, subject: PreferenceSubject, returnTo: String, context: ServerRequestContext
    ) async throws -> PreferencesView? {
        guard let app = apps.apps[topic], !app.preferenceCategories.isEmpty else { return nil }
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
        return PreferencesView(
            prefTopic: topic, prefSubject: subject.key, prefSubjectLabel: subject.consoleLabel,
            prefCategories: categories, prefCanChange: canChange, prefReturn: returnTo,
            prefUpdatedAt: stored.updatedAt.map(Self.display) ?? "never")
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

        let prefTopic: String
        let prefSubject: String
        let prefSubjectLabel: String
        let prefCategories: [Category]
        let prefCanChange: Bool
        let prefReturn: String
        let prefUpdatedAt: String
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
        _ = try await store.updatePreferences(topic: topic, subject: subject, choices: choices, at: clock.now())
        let summary = choices.keys.sorted().map { "\($0)=\(choices[$0]!.map { $0 ? "on" : "off" } ?? "default")" }
        await audit.record(
            .preferencesChanged, context, app: topic, subject: "\(subject)", detail: summary.joined(separator: ", "))
        let back = form["return"].flatMap { $0.hasPrefix("/console/") ? $0 : nil } ?? "/console/devices"
        return Self.redirect(back + (back.contains("?") ? "&" : "?") + "preferences=saved")
    }
}
