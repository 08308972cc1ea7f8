/// A platform-neutral notification category: the buttons a notification shows when its payload's `category` names it.
///
/// The Apple glue turns it into `UNNotificationCategory`; the same description lets the server check that a send's
/// `category` is one the app registered, and lets tests cover the app's actions on Linux.
///
/// ```swift
/// let invitation = NotificationCategory.acceptOrReject()
/// // payload: {"aps": {"alert": {"title": "Coffee at 3?"}, "category": "AcceptOrReject"}}
/// ```
public struct NotificationCategory: Sendable, Hashable, Identifiable {
    /// Matches the payload's `aps.category`.
    public var identifier: String
    /// The buttons, most important first: a banner shows only the first two, the expanded view up to ten.
    public var actions: [NotificationAction]
    /// Behaviour of the category as a whole.
    public var options: Options

    /// The identifier, for `Identifiable`.
    public var id: String { identifier }

    /// Describes a category.
    public init(identifier: String, actions: [NotificationAction], options: Options = []) {
        self.identifier = identifier
        self.actions = actions
        self.options = options
    }

    /// Options of a category.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Tell the app when the user dismisses the notification (`UNNotificationDismissActionIdentifier`).
        public static let customDismissAction = Options(rawValue: 1 << 0)
        /// Allow the category in CarPlay.
        public static let allowInCarPlay = Options(rawValue: 1 << 1)
        /// Show the title when previews are hidden.
        public static let hiddenPreviewsShowTitle = Options(rawValue: 1 << 2)
        /// Show the subtitle when previews are hidden.
        public static let hiddenPreviewsShowSubtitle = Options(rawValue: 1 << 3)
    }

    /// The most actions a category may have: what the expanded notification can show.
    public static let maximumActions = 10

    /// The book's invitation category: `AcceptOrReject` with `accept` and `reject`, both requiring an unlocked device
    /// as in the book; `reject` is also marked destructive, so the system shows it in red.
    /// - Parameters:
    ///   - acceptTitle: the localized title of the accept button.
    ///   - rejectTitle: the localized title of the reject button.
    public static func acceptOrReject(acceptTitle: String = "Accept", rejectTitle: String = "Reject")
        -> NotificationCategory
    {
        NotificationCategory(
            identifier: "AcceptOrReject",
            actions: [
                NotificationAction(identifier: "accept", title: acceptTitle, options: [.authenticationRequired]),
                NotificationAction(
                    identifier: "reject", title: rejectTitle, options: [.authenticationRequired, .destructive]),
            ])
    }

    /// The action with an identifier, if the category has it.
    public func action(withIdentifier identifier: String) -> NotificationAction? {
        actions.first { $0.identifier == identifier }
    }

    /// Checks what the system would silently get wrong: empty or duplicate identifiers, too many actions.
    /// - Throws: ``NotificationCategoryError`` naming the category and the action at fault.
    public func validate() throws(NotificationCategoryError) {
        guard !identifier.isEmpty else {
            throw NotificationCategoryError(
                "A category has an empty identifier: use the value payloads send as aps.category.")
        }
        guard actions.count <= Self.maximumActions else {
            throw NotificationCategoryError(
                "The category \(identifier) has \(actions.count) actions; the system shows at most \(Self.maximumActions): drop the least used."
            )
        }
        var seen = Set<String>()
        for action in actions {
            guard !action.identifier.isEmpty, !action.title.isEmpty else {
                throw NotificationCategoryError(
                    "An action of the category \(identifier) has an empty identifier or title: give each action both.")
            }
            guard !NotificationResponseAction.systemIdentifiers.contains(action.identifier) else {
                throw NotificationCategoryError(
                    "The action \(action.identifier) of the category \(identifier) uses a system identifier: choose your own."
                )
            }
            guard seen.insert(action.identifier).inserted else {
                throw NotificationCategoryError(
                    "The category \(identifier) has two actions named \(action.identifier): the app could not tell them apart."
                )
            }
        }
    }
}

/// A button on a notification.
public struct NotificationAction: Sendable, Hashable, Identifiable {
    /// What the app receives as the response's `actionIdentifier`.
    public var identifier: String
    /// The button's localized title.
    public var title: String
    /// How the button behaves.
    public var options: Options

    /// The identifier, for `Identifiable`.
    public var id: String { identifier }

    /// Describes a button.
    public init(identifier: String, title: String, options: Options = []) {
        self.identifier = identifier
        self.title = title
        self.options = options
    }

    /// How a button behaves; the same three options as `UNNotificationActionOptions`.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The device must be unlocked to perform it.
        public static let authenticationRequired = Options(rawValue: 1 << 0)
        /// Shown in red: it deletes or declines something.
        public static let destructive = Options(rawValue: 1 << 1)
        /// Opens the app in the foreground.
        public static let foreground = Options(rawValue: 1 << 2)
    }
}

/// What the user did with a notification, from the response's action identifier.
public enum NotificationResponseAction: Sendable, Hashable {
    /// Tapped the notification itself (`UNNotificationDefaultActionIdentifier`).
    case open
    /// Dismissed it; reported only for categories with ``NotificationCategory/Options/customDismissAction``.
    case dismiss
    /// Chose one of the category's buttons.
    case action(NotificationAction)
    /// An identifier the category does not have: the payload named another category, or an old build registered it.
    case unknown(String)

    /// `UNNotificationDefaultActionIdentifier`.
    public static let defaultIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    /// `UNNotificationDismissActionIdentifier`.
    public static let dismissIdentifier = "com.apple.UNNotificationDismissActionIdentifier"
    static let systemIdentifiers: Set<String> = [defaultIdentifier, dismissIdentifier]

    /// Reads a response.
    /// - Parameters:
    ///   - identifier: the response's `actionIdentifier`.
    ///   - categoryIdentifier: the notification's category, as delivered.
    ///   - categories: the categories the app registered.
    public init(identifier: String, categoryIdentifier: String, categories: [NotificationCategory]) {
        switch identifier {
        case Self.defaultIdentifier:
            self = .open
        case Self.dismissIdentifier:
            self = .dismiss
        default:
            let category = categories.first { $0.identifier == categoryIdentifier }
            if let action = category?.action(withIdentifier: identifier) {
                self = .action(action)
            } else {
                self = .unknown(identifier)
            }
        }
    }
}

/// Why a category description would not work as intended.
public struct NotificationCategoryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong and what to do.
    public let message: String

    init(_ message: String) { self.message = message }

    public var description: String { message }
}
