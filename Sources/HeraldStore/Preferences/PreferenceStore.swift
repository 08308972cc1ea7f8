public import Foundation
public import HeraldCore

/// A person's choices of which kinds of notification an app may send them (its preference categories), kept per
/// app and subject.
///
/// A subject is the person when the device's registration names a user, else the app installation, else the
/// token: so a choice made on one device of a signed-in user holds on all their devices of that app. Categories not
/// chosen follow the app's defaults, which the server's configuration holds; the store keeps choices only.
/// Methods throw ``StoreError``.
public protocol PreferenceStore: Sendable {
    /// The choices a subject made for an app's categories (empty when none).
    func preferences(topic: String, subject: PreferenceSubject) async throws -> StoredPreferences

    /// Records choices: each named category is set on (`true`), off (`false`) or back to the app's default (`nil`);
    /// categories not named keep their choice. The subject's own quiet hours change as `quietHours` says.
    /// - Returns: The subject's choices after the change.
    func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], quietHours: OwnQuietHoursChange,
        at date: Date
    ) async throws -> StoredPreferences
}

extension PreferenceStore {
    /// Records category choices; the subject's own quiet hours stay as they are.
    public func updatePreferences(
        topic: String, subject: PreferenceSubject, choices: [String: Bool?], at date: Date
    ) async throws -> StoredPreferences {
        try await updatePreferences(topic: topic, subject: subject, choices: choices, quietHours: .keep, at: date)
    }
}

/// What an update does to a subject's own quiet hours.
public enum OwnQuietHoursChange: Sendable, Hashable {
    /// Leaves them as they are.
    case keep
    /// Forgets them: the app's window applies again.
    case appWindow
    /// Sets them.
    case own(OwnQuietHours)
}

/// Whose preferences: the person, the installation or the token a registration names, in that order.
public enum PreferenceSubject: Sendable, Hashable, CustomStringConvertible {
    case user(String)
    case installation(UUID)
    case token(DeviceToken)

    /// The subject of a registration: its user, else its installation, else its token.
    public init(of registration: TokenRegistration) {
        if let user = registration.userID {
            self = .user(user)
        } else if let installation = registration.installationID {
            self = .installation(installation)
        } else {
            self = .token(registration.token)
        }
    }

    /// The stored key: a prefix for the kind, then the value. ``DeviceQuery`` computes the same key from a device row.
    package var key: String {
        switch self {
        case .user(let user): "u:" + user
        case .installation(let installation): "i:" + installation.lowercasedText
        case .token(let token): "t:" + token.hex
        }
    }

    /// Safe to log: a token is redacted.
    public var description: String {
        switch self {
        case .user(let user): "user \(user)"
        case .installation(let installation): "installation \(installation)"
        case .token(let token): "token \(token.redacted)"
        }
    }
}

/// The choices one subject made for an app's categories.
public struct StoredPreferences: Sendable, Hashable {
    /// On or off, by category name; a category absent follows the app's default.
    public var choices: [String: Bool]
    /// The subject's own quiet hours; `nil`: the app's window applies.
    public var quietHours: OwnQuietHours?
    /// When a choice last changed; `nil` when none was ever made.
    public var updatedAt: Date?

    public init(choices: [String: Bool] = [:], quietHours: OwnQuietHours? = nil, updatedAt: Date? = nil) {
        self.choices = choices
        self.quietHours = quietHours
        self.updatedAt = updatedAt
    }
}

/// A send's preference rule for the device query: only the devices whose subject lets the category through.
public struct PreferenceFilter: Sendable, Hashable {
    /// The send's category.
    public var category: String
    /// Whether a subject that made no choice for it receives it (the category's default).
    public var enabledByDefault: Bool

    public init(category: String, enabledByDefault: Bool) {
        self.category = category
        self.enabledByDefault = enabledByDefault
    }
}
