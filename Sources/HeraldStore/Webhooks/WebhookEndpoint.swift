public import Foundation
import HeraldCore

/// What an endpoint can be told about (docs/integrations.md, "Events").
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// A send ended with every target tried.
    case sendCompleted = "send.completed"
    /// A send stopped before its end.
    case sendFailed = "send.failed"
    /// APNs accepted a notification. One per device: subscribe only when the receiver can take a campaign's worth.
    case notificationAccepted = "notification.accepted"
    /// APNs refused a notification, or it could not be delivered; the reason says why.
    case notificationRejected = "notification.rejected"
    /// APNs said the token is dead, and Herald took it out of every send.
    case tokenRemoved = "token.removed"
    /// The token belonged to the other APNs environment, and Herald corrected its record.
    case tokenCorrected = "token.corrected"
    /// A push-to-start token's pushes started nothing several times in a row, and Herald left it out of sends until
    /// the app registers a new one.
    case tokenStale = "token.stale"
    /// The app reported the notification shown or handled in the background.
    case receiptReceived = "receipt.received"
    /// The user opened the notification.
    case receiptOpened = "receipt.opened"
    /// The user chose one of the notification's actions.
    case receiptAction = "receipt.action"
    /// The user dismissed the notification.
    case receiptDismissed = "receipt.dismissed"
    /// A Live Activity was ended through the API.
    case activityEnded = "activity.ended"
    /// Asked for by an administrator ("send a test event"): every endpoint gets it, whatever it subscribes to.
    case test = "webhook.test"

    /// The types an endpoint may subscribe to (all but ``test``).
    public static let subscribable: [WebhookEventType] = allCases.filter { $0 != .test }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A receiver of an app's events, as stored. Its secret is not part of it: it is shown once, when made or rotated.
public struct WebhookEndpoint: Sendable, Hashable {
    /// Whether events are being delivered.
    public enum Status: String, Sendable, Hashable {
        /// Delivered as they come.
        case active
        /// Held: new events wait; ``WebhookEndpoint/pausedReason`` says why.
        case paused
    }

    public var id: UUID
    /// The app (bundle id) whose events it receives.
    public var app: String
    /// Where batches are posted.
    public var url: String
    /// The event types it receives, sorted.
    public var events: [WebhookEventType]
    /// Free text for people.
    public var description: String
    public var status: Status
    /// Why it is paused: too many failures in a row (with the last one), or an administrator.
    public var pausedReason: String?
    public var pausedAt: Date?
    /// Failed deliveries since the last one that went through.
    public var consecutiveFailures: Int
    /// When the first of those failures happened.
    public var firstFailureAt: Date?
    /// When the deliverer may try it next (the backoff after a failure).
    public var nextAttemptAt: Date
    public var createdAt: Date
    public var updatedAt: Date
    /// Until when the previous secret still signs deliveries after a rotation; `nil` when there is none.
    public var previousSecretExpiresAt: Date?

    public init(
        id: UUID, app: String, url: String, events: [WebhookEventType], description: String, status: Status,
        pausedReason: String?, pausedAt: Date?, consecutiveFailures: Int, firstFailureAt: Date?,
        nextAttemptAt: Date, createdAt: Date, updatedAt: Date, previousSecretExpiresAt: Date?
    ) {
        self.id = id
        self.app = app
        self.url = url
        self.events = events
        self.description = description
        self.status = status
        self.pausedReason = pausedReason
        self.pausedAt = pausedAt
        self.consecutiveFailures = consecutiveFailures
        self.firstFailureAt = firstFailureAt
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.previousSecretExpiresAt = previousSecretExpiresAt
    }
}

/// What ``WebhookStore/createWebhookEndpoint(_:)`` records.
public struct NewWebhookEndpoint: Sendable, Hashable {
    public var id: UUID
    public var app: String
    public var url: String
    public var events: [WebhookEventType]
    public var description: String
    /// The signing secret, made by the caller (``WebhookSecret``).
    public var secret: String

    public init(
        id: UUID = UUID(), app: String, url: String, events: [WebhookEventType], description: String = "",
        secret: String
    ) {
        self.id = id
        self.app = app
        self.url = url
        self.events = events
        self.description = description
        self.secret = secret
    }
}

/// Changes to an endpoint; `nil` leaves a field as it is.
public struct WebhookEndpointUpdate: Sendable, Hashable {
    public var url: String?
    public var events: [WebhookEventType]?
    public var description: String?

    public init(url: String? = nil, events: [WebhookEventType]? = nil, description: String? = nil) {
        self.url = url
        self.events = events
        self.description = description
    }
}

/// The signing secrets of an endpoint: `whsec_` and 32 random bytes in hex.
public enum WebhookSecret {
    /// A new secret.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "whsec_" + Hex.string(bytes)
    }
}
