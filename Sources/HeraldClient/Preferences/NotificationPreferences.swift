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

    /// The app (bundle id).
    public var topic: String
    public var subject: Subject
    /// Every declared category, in the app's order.
    public var categories: [Category]
    /// The category of a send that names none, when the app has one.
    public var defaultCategory: String?
    /// When a choice last changed; `nil` when none was ever made.
    public var updatedAt: Date?

    public init(
        topic: String, subject: Subject, categories: [Category], defaultCategory: String? = nil, updatedAt: Date? = nil
    ) {
        self.topic = topic
        self.subject = subject
        self.categories = categories
        self.defaultCategory = defaultCategory
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
        self.init(
            topic: topic, subject: subject, categories: categories, defaultCategory: json["defaultCategory"]?.stringValue,
            updatedAt: json["updatedAt"]?.stringValue.flatMap { RFC3339.date($0) })
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
            "updatedAt": updatedAt.map { .string(RFC3339.string($0)) } ?? .null,
        ])
    }
}
