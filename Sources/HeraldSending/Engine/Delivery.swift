import Foundation
package import HeraldCore
package import HeraldStore
package import Logging

/// One device's outcome, and what the server did about it (stored with the outcome, so background sends show it
/// too).
package struct ReportedOutcome: Sendable {
    package typealias Action = DeliveryOutcome.Action

    package var outcome: DeliveryOutcome
    package var action: Action? {
        get { outcome.action }
        set { outcome.action = newValue }
    }
    /// Whether the send was cancelled before APNs answered (``PushResult/isCancelled``): the device has no outcome,
    /// and this one must not be recorded.
    package internal(set) var isCancelled = false

    package init(outcome: DeliveryOutcome, action: Action?) {
        self.outcome = outcome
        self.outcome.action = action ?? outcome.action
    }
}

/// Sends to one device and applies APNs's verdict to the registry (docs/server.md, "Outcome handling").
///
/// - `410 Unregistered` / `ExpiredToken`: ``HeraldStore/TokenStore/invalidate(token:reason:at:)``, which keeps a
///   token registered again after APNs's timestamp.
/// - `BadDeviceToken`: one try in the other environment; accepted there → the record moves to it, else the token is
///   removed.
/// - `DeviceTokenNotForTopic`: recorded and logged; the token stays (it may belong to another app of the user).
/// - Retryable answers were already retried by the sender's policy.
///
/// Every removal is logged with its reason and the token's redacted suffix.
package struct Delivery: Sendable {
    let store: any TokenStore
    let sender: any PushSender
    let metrics: any SendingMetrics
    let logger: Logger
    let clock: any WallClock

    /// - Parameters:
    ///   - store: Where rejected tokens are invalidated and corrected environments recorded.
    ///   - sender: What sends each notification, with the retry policy.
    ///   - metrics: Where outcomes, removals and corrections are counted.
    package init(
        store: any TokenStore, sender: any PushSender, metrics: any SendingMetrics, logger: Logger,
        clock: any WallClock
    ) {
        self.store = store
        self.sender = sender
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    /// Sends one notification to one device, and applies APNs's verdict to the registry.
    /// - Parameter language: The language of the notification's text (``SendPlan/variant(for:)``), for a web message.
    package func deliver(
        _ notification: PreparedNotification, to device: DeviceRegistration, language: String? = nil
    ) async -> ReportedOutcome {
        await settle(await push(notification, to: device, language: language), notification, device)
    }

    /// Sends one notification to one device without applying the answer: through APNs to a device token, through its
    /// push service to a Web Push subscription.
    func push(_ notification: PreparedNotification, to device: DeviceRegistration, language: String?) async -> PushResult {
        if let subscription = device.registration.webPush {
            return await sender.send(notification, to: subscription, language: language)
        }
        return await sender.send(notification, to: device.token, in: device.environment)
    }

    /// The outcome of an answer that needs nothing from the registry (accepted, failed), at once; `nil` for a
    /// rejection, which ``settle(_:_:_:)`` applies to the registry from a task.
    func settledAtOnce(_ pushed: PushResult, _ device: DeviceRegistration) -> ReportedOutcome? {
        if case .rejected = pushed.result { return nil }
        return settle(pushed, device)
    }

    /// Counts a notification whose wait for APNs was cancelled, which has no outcome.
    func countCancelled() { metrics.cancelled() }

    /// The outcome of an answer that needs nothing from the registry (accepted, failed).
    private func settle(_ pushed: PushResult, _ device: DeviceRegistration) -> ReportedOutcome {
        if pushed.isCancelled { countCancelled() } else { count(pushed.result, device) }
        var reported = ReportedOutcome(outcome: outcome(pushed, device.token, device.environment), action: nil)
        reported.isCancelled = pushed.isCancelled
        return reported
    }

    private func outcome(_ pushed: PushResult, _ token: DeviceToken, _ environment: APNSEnvironment) -> DeliveryOutcome {
        DeliveryOutcome(
            token: token, environment: environment, result: pushed.result, at: clock.now(),
            apnsUniqueID: pushed.apnsUniqueID, attempts: pushed.attempts)
    }

    /// Applies APNs's answer to the registry and returns the outcome with what was done.
    /// - Parameters:
    ///   - send: The background send it is part of: an environment it corrects is noted against it, so that its walk
    ///     of the other environment does not push to the device again.
    ///   - outage: For a background send, how to wait out the database while it is away: a token APNs removed, or
    ///     one whose environment it corrected, is then applied on its return rather than left as it was (`givenUp`
    ///     ends the wait, as for the send's recordings).
    func settle(
        _ pushed: PushResult, _ notification: PreparedNotification, _ device: DeviceRegistration, send: SendID? = nil,
        outage: StoreOutage? = nil, givenUp: @escaping @Sendable () -> Bool = { false }
    ) async -> ReportedOutcome {
        @Sendable func storing<T: Sendable>(_ action: String, _ operation: @Sendable () async throws -> T)
            async throws -> T
        {
            guard let outage else { return try await operation() }
            return try await outage.retrying(action, givenUp: givenUp, operation)
        }
        let token = device.token
        let environment = device.environment
        let result = pushed.result
        guard case .rejected(let status, let reason, let timestamp) = result else { return settle(pushed, device) }
        var reported = ReportedOutcome(outcome: outcome(pushed, token, environment), action: nil)
        if device.registration.webPush != nil {
            // A push service's 404 and 410 say the subscription is gone (unsubscribed, expired): it leaves the registry
            // as a token APNs answered 410 does. It has no timestamp: a browser that subscribes again gets a new
            // endpoint, so a new token.
            if status == 404 || status == 410 {
                reported.action = await invalidate(
                    token, reason: reason, at: nil, environment: environment, storing: storing)
            }
        } else if reason == .badDeviceToken {
            let other = environment.other
            let second = await sender.send(notification, to: token, in: other)
            if second.isCancelled {
                // The other host's answer never came: nothing is known that would correct or remove the token.
                metrics.outcome(result)
                return reported
            }
            let retry = second.result
            // The trace shows both hosts' attempts: the correction is a second attempt of the same notification.
            let attempts = DeliveryAttempt.joined(
                pushed, in: environment, at: reported.outcome.at, then: second, in: other, at: clock.now())
            reported.outcome.attempts = attempts
            if case .accepted = retry {
                do {
                    _ = try await storing("correct a token's environment") {
                        try await store.updateEnvironment(token: token, to: other, correctedBy: send)
                    }
                    var corrected = outcome(second, token, other)
                    corrected.attempts = attempts
                    reported = ReportedOutcome(outcome: corrected, action: .environmentCorrected)
                    metrics.environmentCorrected()
                    logger.notice(
                        "Corrected a token's environment: the other host accepted it",
                        metadata: [LogKey.tokenSuffix: "\(token.redacted)", LogKey.environment: "\(other)"])
                } catch {
                    logger.error(
                        "Cannot correct a token's environment",
                        metadata: [LogKey.tokenSuffix: "\(token.redacted)", LogKey.error: "\(error)"])
                }
                metrics.outcome(retry)
                return reported
            }
            reported.action = await invalidate(
                token, reason: .badDeviceToken, at: nil, environment: environment, storing: storing)
        } else if reason.invalidatesToken {
            reported.action = await invalidate(
                token, reason: reason, at: timestamp, environment: environment, storing: storing)
        } else if reason == .deviceTokenNotForTopic {
            logger.warning(
                "APNs says a token is not for this app's topic: kept, check that it was registered with the right topic",
                metadata: [LogKey.tokenSuffix: "\(token.redacted)", LogKey.topic: "\(notification.topic)"])
        }
        count(result, device)
        return reported
    }

    /// Counts an outcome under its transport: APNs's, or Web Push's.
    private func count(_ result: DeliveryOutcome.Result, _ device: DeviceRegistration) {
        if device.registration.webPush != nil { metrics.webPushOutcome(result) } else { metrics.outcome(result) }
    }

    private func invalidate(
        _ token: DeviceToken, reason: APNSReason, at timestamp: Date?, environment: APNSEnvironment,
        storing: (String, @Sendable () async throws -> InvalidationResult) async throws -> InvalidationResult
    ) async -> ReportedOutcome.Action? {
        let metadata: Logger.Metadata = [
            LogKey.tokenSuffix: "\(token.redacted)", LogKey.reason: "\(reason)", LogKey.environment: "\(environment)",
        ]
        do {
            switch try await storing("remove a rejected token", { try await store.invalidate(token: token, reason: reason, at: timestamp) }) {
            case .removed:
                metrics.removal(reason)
                logger.notice("Removed a token from sends", metadata: metadata)
                return .removed
            case .keptBecauseReregistered:
                logger.info(
                    "Kept a token APNs rejected: the app registered it again after APNs's timestamp", metadata: metadata
                )
                return .kept
            case .notFound:
                return nil
            }
        } catch {
            logger.error(
                "Cannot remove a rejected token", metadata: metadata.merging([LogKey.error: "\(error)"]) { $1 })
            return nil
        }
    }
}
