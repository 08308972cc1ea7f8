import Foundation
package import HeraldAPNS
package import HeraldCore
package import HeraldStore

/// What the server sends through: one prepared notification to one token in one environment.
///
/// The server implements it over HeraldAPNS clients (one per app and environment); tests may plug in anything. Implementations retry what the
/// APNs retry policy allows and return how the notification ended; they do not touch the registry.
///
/// Cancellation: a send whose task is cancelled, or a start whose `cancellation` is, ends promptly with
/// ``PushResult/cancelled(_:)`` rather than waiting for APNs. Its device then gets no outcome (APNs may or may not
/// have received it): the send engine never records it as failed.
package protocol PushSender: Sendable {
    /// Sends a notification and returns how it ended: accepted, rejected with APNs's reason, failed, or cancelled
    /// when its task was cancelled first.
    /// - Parameters:
    ///   - notification: Validated and encoded; its topic carries the push type's suffix.
    ///   - token: The device.
    ///   - environment: The host to send to: the token's recorded environment, or the other one when correcting a
    ///     `BadDeviceToken`.
    func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment) async
        -> PushResult

    /// Starts a send without a task when that is possible right now, for the fan-out's bulk loop
    /// (``HeraldAPNS/APNSBulkSend``).
    ///
    /// Calls `answered` once (from any thread; it must not block) with the end, or with the rest of the work to run in
    /// a task (retries): the client's answer with its result mapped, not wrapped again. Once `cancellation` is
    /// cancelled, the end is ``PushResult/cancelled(_:)`` unless APNs answered before.
    /// - Returns: `false` when the send could not start without waiting: nothing was sent, and the caller uses
    ///   ``send(_:to:in:)`` from a task. The default implementation always answers `false`.
    func start(
        _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
        cancellation: APNSCancellation, answered: @escaping @Sendable (APNSStarted<PushResult>) -> Void
    ) -> Bool

    /// Sends a notification to a Web Push subscription (a `webpush` device) through its push service, as the web
    /// message the notification makes (docs/web-push.md); a `404` or `410` answer is a rejection whose status says
    /// the subscription is gone. The default implementation sends no Web Push and says so.
    /// - Parameter language: The language of the notification's text (its variant's), the message's `lang`.
    func send(_ notification: PreparedNotification, to subscription: WebPushSubscription, language: String?) async
        -> PushResult
}

extension PushSender {
    package func start(
        _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
        cancellation: APNSCancellation, answered: @escaping @Sendable (APNSStarted<PushResult>) -> Void
    ) -> Bool { false }

    package func send(
        _ notification: PreparedNotification, to subscription: WebPushSubscription, language: String?
    ) async -> PushResult {
        PushResult(.failed(message: "This sender has no Web Push: the subscription was not sent to."))
    }
}

/// How one notification to one device ended, with what the delivery trace keeps of it.
package struct PushResult: Sendable {
    /// The answer, or the lack of one.
    package var result: DeliveryOutcome.Result
    /// The sandbox's `apns-unique-id` of the last answer (development only).
    package var apnsUniqueID: String?
    /// Every attempt when there was more than one; empty when the first decided (no allocation on the usual path).
    package var attempts: [DeliveryAttempt]
    /// Whether the send was cancelled before APNs answered (``PushSender``): its outcome is unknown, so it is not
    /// recorded; ``result`` is then a failure that says so, for callers that must show something.
    package private(set) var isCancelled = false

    package init(_ result: DeliveryOutcome.Result, apnsUniqueID: String? = nil, attempts: [DeliveryAttempt] = []) {
        self.result = result
        self.apnsUniqueID = apnsUniqueID
        self.attempts = attempts
    }

    /// A send cancelled before APNs answered; `message` says how far it got.
    package static func cancelled(_ message: String, attempts: [DeliveryAttempt] = []) -> PushResult {
        var result = PushResult(.failed(message: message), attempts: attempts)
        result.isCancelled = true
        return result
    }
}

extension DeliveryAttempt {
    /// The attempts of a notification sent to one host and then to the other (an environment correction), numbered
    /// one after the other; a result whose first attempt decided counts as that one attempt.
    static func joined(
        _ first: PushResult, in environment: APNSEnvironment, at firstAt: Date, then second: PushResult,
        in other: APNSEnvironment, at secondAt: Date
    ) -> [DeliveryAttempt] {
        let before = first.attempts.isEmpty ? [single(first, in: environment, at: firstAt)] : first.attempts
        let after = second.attempts.isEmpty ? [single(second, in: other, at: secondAt)] : second.attempts
        return before + after.enumerated().map { offset, attempt in
            var renumbered = attempt
            renumbered.number = before.count + offset + 1
            return renumbered
        }
    }

    /// The one attempt of a result whose first attempt decided.
    private static func single(_ pushed: PushResult, in environment: APNSEnvironment, at: Date) -> DeliveryAttempt {
        switch pushed.result {
        case .accepted:
            DeliveryAttempt(number: 1, at: at, environment: environment, status: 200, apnsUniqueID: pushed.apnsUniqueID)
        case .rejected(let status, let reason, _):
            DeliveryAttempt(
                number: 1, at: at, environment: environment, status: status, reason: reason.rawValue,
                apnsUniqueID: pushed.apnsUniqueID)
        case .failed(let message):
            DeliveryAttempt(number: 1, at: at, environment: environment, message: message)
        }
    }
}
