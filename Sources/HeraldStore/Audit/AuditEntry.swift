public import Foundation
import HeraldCore

/// One change someone made, as the audit log keeps it: who, when, from where, what (docs/security.md, "Audit log").
///
/// It never holds a secret, a whole device token or a notification's text: callers put a key's display prefix, a
/// token's redacted form (`…` and its last 8 hex digits) and a send's summary in ``detail``.
public struct AuditEntry: Sendable, Hashable, Identifiable {
    /// Time-ordered, so entries made one after another sort in that order.
    public var id: UUID
    /// When the change was made.
    public var at: Date
    /// Who made it.
    public var actor: AuditActor
    /// The client's address (IP, without port); `nil` for the CLI and the server itself.
    public var address: String?
    /// What was done.
    public var action: AuditAction
    /// The app it concerned, when one: keys scoped to apps read only their apps' entries.
    public var app: String?
    /// What it was done to: a send id, a key id, a channel id, an activity id, a redacted token.
    public var subject: String?
    /// The change in words, for people; no secret, no whole token.
    public var detail: String

    public init(
        id: UUID? = nil, at: Date, actor: AuditActor, address: String? = nil, action: AuditAction, app: String? = nil,
        subject: String? = nil, detail: String = ""
    ) {
        self.id = id ?? .timeOrdered(at: at)
        self.at = at
        self.actor = actor
        self.address = address
        self.action = action
        self.app = app
        self.subject = subject
        self.detail = detail
    }
}

/// Who made a change.
public struct AuditActor: Sendable, Hashable {
    /// How they were known.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// An API key, through the HTTP API.
        case apiKey = "api-key"
        /// A console session (signed in with a key, or with the one-time link).
        case console
        /// The `herald` command line, on the server's machine.
        case cli
        /// An app, through the registration API with its registration key (it unregistered one of its devices):
        /// named by its bundle id, without a key.
        case app
        /// Herald itself, by a rule an operator switched on (the channel tidy): named by the rule.
        case server
    }

    public var kind: Kind
    /// The API key's id (a console session's key's too); `nil` for the CLI and a one-time-link session.
    public var keyID: UUID?
    /// The key's name, `one-time link`, or the CLI's user.
    public var name: String

    public init(kind: Kind, keyID: UUID?, name: String) {
        self.kind = kind
        self.keyID = keyID
        self.name = name
    }
}

/// What kind of change: an open set, as stored (`key.created`, `send.cancelled`, …).
public struct AuditAction: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let keyCreated = AuditAction(rawValue: "key.created")
    public static let keyRevoked = AuditAction(rawValue: "key.revoked")
    public static let sendCreated = AuditAction(rawValue: "send.created")
    public static let sendCancelled = AuditAction(rawValue: "send.cancelled")
    public static let deviceRemoved = AuditAction(rawValue: "device.removed")
    /// An administrator registered a device by hand (`herald tokens add`); an app's own registrations are its everyday
    /// traffic and not recorded.
    public static let deviceRegistered = AuditAction(rawValue: "device.registered")
    public static let activityStarted = AuditAction(rawValue: "activity.started")
    public static let activityEnded = AuditAction(rawValue: "activity.ended")
    public static let channelCreated = AuditAction(rawValue: "channel.created")
    public static let channelDeleted = AuditAction(rawValue: "channel.deleted")
    public static let broadcastSent = AuditAction(rawValue: "channel.broadcast")
    public static let signedIn = AuditAction(rawValue: "console.signed-in")
    public static let signedOut = AuditAction(rawValue: "console.signed-out")
    /// An expired key was refused for the first time (its actor is that key, from the refused client's address).
    public static let keyExpired = AuditAction(rawValue: "key.expired")
    /// An admin changed a device's person's notification preferences (not the app doing it for its user).
    public static let preferencesChanged = AuditAction(rawValue: "device.preferences-changed")
    public static let webhookCreated = AuditAction(rawValue: "webhook.created")
    /// Its URL, events or description changed.
    public static let webhookChanged = AuditAction(rawValue: "webhook.changed")
    public static let webhookPaused = AuditAction(rawValue: "webhook.paused")
    public static let webhookResumed = AuditAction(rawValue: "webhook.resumed")
    public static let webhookSecretRotated = AuditAction(rawValue: "webhook.secret-rotated")
    public static let webhookDeleted = AuditAction(rawValue: "webhook.deleted")
    /// Its dead letter was sent again.
    public static let webhookReplayed = AuditAction(rawValue: "webhook.replayed")
}

/// Which entries to read; every filter is optional.
public struct AuditQuery: Sendable, Hashable {
    /// Only entries about these apps (an entry about no app is in none); `nil`: every entry.
    public var apps: Set<String>?
    /// Only entries by this key (its API calls and its console sessions).
    public var keyID: UUID?
    /// Only entries of this kind.
    public var action: AuditAction?

    public init(apps: Set<String>? = nil, keyID: UUID? = nil, action: AuditAction? = nil) {
        self.apps = apps
        self.keyID = keyID
        self.action = action
    }
}

/// Where a page of ``AuditStore/auditEntries(_:after:limit:)`` ended: its last entry's time and id.
public struct AuditCursor: Sendable, Hashable, LosslessStringConvertible {
    package let at: Int64
    package let id: String

    package init(at: Int64, id: String) {
        self.at = at
        self.id = id
    }

    /// Parses `<microseconds>_<entry id>`; `nil` for anything else.
    public init?(_ description: String) {
        let parts = description.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]), let id = UUID(text: String(parts[1])) else { return nil }
        at = time
        self.id = id.lowercasedText
    }

    public var description: String { "\(at)_\(id)" }
}

/// One page of entries, newest first.
public struct AuditPage: Sendable, Hashable {
    public var entries: [AuditEntry]
    /// Where the next page starts; `nil` on the last page.
    public var next: AuditCursor?
}
