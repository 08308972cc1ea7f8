import Foundation
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore
import Synchronization

/// The deployment's Web Push: one ``HeraldAPNS/WebPushClient`` for every push service, each app's VAPID key, and the
/// web message each notification makes (docs/web-push.md, "What a web notification carries").
///
/// A send's notification is one of its few prepared variants, sent to every device of the send: its web message is
/// made once per variant and reused (``MessageCache``), with only the `TTL` counted again at each send.
final class WebPushSenders: Sendable {
    let client: WebPushClient
    private let apps: [String: AppConfiguration.WebPush]
    private let clock: any WallClock
    private let messages = Mutex(MessageCache())

    init(client: WebPushClient, apps: [AppConfiguration], clock: any WallClock) {
        self.client = client
        self.apps = Dictionary(apps.compactMap { app in app.webPush.map { (app.bundleID, $0) } }) { first, _ in first }
        self.clock = clock
    }

    /// Sends a notification to a subscription as its web message; never throws: the result says how it ended.
    /// - Parameter language: The language of the notification's text, the message's `lang`.
    func send(_ notification: PreparedNotification, to subscription: WebPushSubscription, language: String?) async
        -> PushResult
    {
        let bundleID = notification.pushType.bundleID(fromTopic: notification.topic) ?? notification.topic
        guard let app = apps[bundleID] else {
            return PushResult(
                .failed(
                    message: "\(bundleID) has no VAPID key, so its web subscriptions cannot be sent to: configure HERALD_VAPID_PRIVATE_KEY and HERALD_VAPID_SUBJECT for it."
                ))
        }
        let now = clock.now()
        var message: WebPushMessage
        switch self.message(for: notification, language: language, app: app, now: now) {
        case .success(let made): message = made
        case .failure(let error): return PushResult(.failed(message: error.message))
        }
        message.ttl = WebPushMessage.ttl(for: notification.expiration, now: now)
        let delivery = await client.send(message, to: subscription, key: app.vapidKey, subject: app.subject)
        let attempts = delivery.trail.map { DeliveryAttempt($0, in: .production) }
        switch delivery.result {
        case .accepted:
            return PushResult(.accepted(apnsID: notification.apnsID ?? APNSID()), attempts: attempts)
        case .rejected(let status, let reason) where status == 429 || status >= 500:
            // Retried within the policy's window: the push service never took it, so it failed rather than was refused.
            return PushResult(
                .failed(
                    message: "The push service answered \(status) \(reason) to all \(delivery.attempts) attempts; the notification was not delivered: send it again later."
                ), attempts: attempts)
        case .rejected(let status, let reason):
            return PushResult(.rejected(status: status, reason: APNSReason(reason), timestamp: nil), attempts: attempts)
        case .failed(let message):
            return PushResult(.failed(message: message), attempts: attempts)
        case .cancelled(let message):
            return .cancelled(message, attempts: attempts)
        }
    }

    /// The web message of a notification variant: made at its first device, reused for a minute (its `timestamp` is
    /// the time it was made).
    private func message(
        for notification: PreparedNotification, language: String?, app: AppConfiguration.WebPush, now: Date
    ) -> Result<WebPushMessage, WebPushError> {
        let key = MessageCache.Key(
            body: notification.body, priority: notification.priority, collapseID: notification.collapseID,
            language: language)
        if let cached = messages.withLock({ $0.message(for: key, at: now) }) { return cached }
        let made: Result<WebPushMessage, WebPushError>
        do {
            made = .success(try Self.makeMessage(for: notification, language: language, app: app, now: now))
        } catch {
            made = .failure(error)
        }
        messages.withLock { $0.keep(made, for: key, at: now) }
        return made
    }

    private static func makeMessage(
        for notification: PreparedNotification, language: String?, app: AppConfiguration.WebPush, now: Date
    ) throws(WebPushError) -> WebPushMessage {
        let payload: Payload
        do {
            payload = try Payload(jsonBytes: notification.body)
        } catch {
            throw WebPushError(
                .notRenderable, "The notification's payload cannot be read as a web notification: \(error.description)")
        }
        return try message(
            for: payload, priority: notification.priority, expiration: notification.expiration,
            collapseID: notification.collapseID, language: language, app: app, now: now)
    }

    /// The web message an app's subscriptions get for a notification: what the sender sends, and what a send is
    /// checked against when it is accepted.
    static func message(
        for payload: Payload, priority: APNSPriority?, expiration: APNSExpiration?, collapseID: String?,
        language: String?, app: AppConfiguration.WebPush, now: Date
    ) throws(WebPushError) -> WebPushMessage {
        try WebPushMessage.make(
            app.format, from: payload, navigate: app.origin, priority: priority, expiration: expiration,
            collapseID: collapseID, language: language, now: now)
    }

    /// The web messages made lately, by variant: a send has a handful, and a minute's reuse spares a parse per device.
    struct MessageCache: ~Copyable {
        struct Key: Hashable {
            let body: [UInt8]
            let priority: APNSPriority?
            let collapseID: String?
            let language: String?
        }

        static let capacity = 64
        static let lifetime: TimeInterval = 60
        private var entries: [Key: (made: Result<WebPushMessage, WebPushError>, at: Date)] = [:]

        func message(for key: Key, at now: Date) -> Result<WebPushMessage, WebPushError>? {
            guard let entry = entries[key], now.timeIntervalSince(entry.at) < Self.lifetime else { return nil }
            return entry.made
        }

        mutating func keep(_ made: Result<WebPushMessage, WebPushError>, for key: Key, at now: Date) {
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = (made, now)
        }
    }
}

extension DeliveryAttempt {
    /// An attempt as the delivery trace keeps it; a push service's attempts are noted under `production` (push services
    /// have no environments).
    init(_ attempt: APNSAttempt, in environment: APNSEnvironment) {
        self.init(
            number: attempt.number, at: attempt.at, environment: environment, connection: attempt.connection,
            status: attempt.status, reason: attempt.reason?.rawValue ?? attempt.error.map { "\($0.code)" },
            message: attempt.error?.message, apnsUniqueID: attempt.uniqueID, retryAfter: attempt.retryAfter)
    }
}
