public import Foundation
import HeraldCore

/// A person's notification preferences for one app, as the server answers them (docs/preferences.md): every category
/// the app declares, in its order, with whether sends of it reach the person.
public struct NotificationPreferences: Sendable, Hashable {
    /// Whose choices they are: a signed-in user's hold on all their devices.
    public enum Subject: String, Sendable, Hashable {
        case user
        case installation
        case token
    }

    /// How a category treats a person who made no choice.
    public enum Mode: String, Sendable, Hashable {
        /// Always sent; cannot be turned off.
        case mandatory
        /// Sent unless turned off.
        case on
        /// Sent only once turned on.
        case off
    }

    /// One category and what applies to the person.
    public struct Category: Sendable, Hashable, Identifiable {
        public var name: String
        public var mode: Mode
        /// Whether sends of this category reach the person.
        public var isEnabled: Bool
        /// Whether the person chose, rather than the app's default applying.
        public var isChosen: Bool

        public var id: String { name }

        public init(name: String, mode: Mode, isEnabled: Bool, isChosen: Bool) {
            self.name = name
            self.mode = mode
            self.isEnabled = isEnabled
            self.isChosen = isChosen
        }
    }

    /// The person's quiet hours: the window that applies, and whether it is their own or the app's.
    public struct QuietHours: Sendable, Hashable {
        /// The window that applies, `HH:MM-HH:MM` in the device's time zone; `nil`: the person chose none.
        public var window: String?
        /// Whether the person chose (a window or none), rather than the app's window applying.
        public var isChosen: Bool
        /// The app's window, which applies to a person who did not choose.
        public var appWindow: String

        public init(window: String?, isChosen: Bool, appWindow: String) {
            self.window = window
            self.isChosen = isChosen
            self.appWindow = appWindow
        }
    }

    /// A change of the person's quiet hours (``RegistrationClient/updatePreferences(_:quietHours:for:)``).
    public enum QuietHoursChoice: Sendable, Hashable {
        /// Back to the app's window.
        case appWindow
        /// Their own window, `HH:MM-HH:MM` in the device's time zone (`23:00-07:00`; an end before the start crosses
        /// midnight; start and end differ).
        case window(String)
        /// No quiet hours: the app's notifications at any hour. (Not `none`, which an optional would read as "keep".)
        case off

        /// The body's `quietHours`.
        var json: JSONValue {
            switch self {
            case .appWindow: .null
            case .window(let window): .string(window)
            case .off: .string("off")
            }
        }

        /// Reads the body's `quietHours`; `nil` when it is not one.
        init?(json: JSONValue) {
            switch json {
            case .null: self = .appWindow
            case .string("off"): self = .off
            case .string(let window): self = .window(window)
            default: return nil
            }
        }
    }

    /// The app (bundle id).
    public var topic: String
    public var subject: Subject
    /// Every declared category, in the app's order.
    public var categories: [Category]
    /// The category of a send that names none, when the app has one.
    public var defaultCategory: String?
    /// The person's quiet hours; `nil` when the app has none (then a person cannot choose their own).
    public var quietHours: QuietHours?
    /// When a choice last changed; `nil` when none was ever made.
    public var updatedAt: Date?

    public init(
        topic: String, subject: Subject, categories: [Category], defaultCategory: String? = nil,
        quietHours: QuietHours? = nil, updatedAt: Date? = nil
    ) {
        self.topic = topic
        self.subject = subject
        self.categories = categories
        self.defaultCategory = defaultCategory
        self.quietHours = quietHours
        self.updatedAt = updatedAt
    }

    /// The category of this name, if the app declares it.
    public subscript(name: String) -> Category? { categories.first { $0.name == name } }

    /// The same preferences with choices applied locally (a change not yet confirmed by the server): `nil` goes back
    /// to the category's default; a mandatory category stays on.
    public func applying(_ changes: [String: Bool?]) -> NotificationPreferences {
        var copy = self
        for index in copy.categories.indices {
            let category = copy.categories[index]
            guard category.mode != .mandatory, let change = changes[category.name] else { continue }
            copy.categories[index].isChosen = change != nil
            copy.categories[index].isEnabled = change ?? (category.mode == .on)
        }
        return copy
    }

    /// The same preferences with a quiet-hours change applied locally (not yet confirmed by the server).
    public func applying(quietHours change: QuietHoursChoice?) -> NotificationPreferences {
        guard let change, var quietHours else { return self }
        switch change {
        case .appWindow: (quietHours.window, quietHours.isChosen) = (quietHours.appWindow, false)
        case .window(let window): (quietHours.window, quietHours.isChosen) = (window, true)
        case .off: (quietHours.window, quietHours.isChosen) = (nil, true)
        }
        var copy = self
        copy.quietHours = quietHours
        return copy
    }

    /// Reads the server's answer; `nil` when it is not one.
    init?(json: JSONValue) {
        guard let topic = json["topic"]?.stringValue,
            let subject = json["subject"]?.stringValue.flatMap(Subject.init(rawValue:)),
            let items = json["categories"]?.arrayValue
        else { return nil }
        var categories: [Category] = []
        for item in items {
            guard let name = item["name"]?.stringValue, let mode = item["mode"]?.stringValue.flatMap(Mode.init(rawValue:)),
                case .bool(let enabled)? = item["enabled"], case .bool(let chosen)? = item["chosen"]
            else { return nil }
            categories.append(Category(name: name, mode: mode, isEnabled: enabled, isChosen: chosen))
        }
        var quietHours: QuietHours?
        if let quiet = json["quietHours"], quiet != .null {
            guard let appWindow = quiet["appWindow"]?.stringValue, case .bool(let chosen)? = quiet["chosen"] else {
                return nil
            }
            quietHours = QuietHours(window: quiet["window"]?.stringValue, isChosen: chosen, appWindow: appWindow)
        }
        self.init(
            topic: topic, subject: subject, categories: categories, defaultCategory: json["defaultCategory"]?.stringValue,
            quietHours: quietHours, updatedAt: json["updatedAt"]?.stringValue.flatMap { RFC3339.date($0) })
    }

    /// The stored form: the server's own shape.
    var json: JSONValue {
        .object([
            "topic": .string(topic), "subject": .string(subject.rawValue),
            "categories": .array(
                categories.map {
                    .object([
                        "name": .string($0.name), "mode": .string($0.mode.rawValue), "enabled": .bool($0.isEnabled),
                        "chosen": .bool($0.isChosen),
                    ])
                }),
            "defaultCategory": defaultCategory.map(JSONValue.string) ?? .null,
            "quietHours": quietHours.map {
                .object([
                    "window": $0.window.map(JSONValue.string) ?? .null, "chosen": .bool($0.isChosen),
                    "appWindow": .string($0.appWindow),
                ])
            } ?? .null,
            "updatedAt": updatedAt.map { .string(RFC3339.string($0)) } ?? .null,
        ])
    }
}
