package import Foundation
import HeraldCore

extension DeviceRegistration {
    /// Rebuilds a record from its stored columns; both backends read rows through this.
    /// - Throws: ``StoreError`` `.corruptRecord` when a column holds something no store writes.
    package init(
        storedToken token: String, topic: String, environment: String, tokenKind: String, userID: String?,
        installationID: String?, preferredLanguages: [String], appVersion: String?, platform: String?,
        tags: [String], registeredAt: Int64, createdAt: Int64, updatedAt: Int64, invalidatedAt: Int64?,
        invalidationReason: String?, apnsTimestamp: Int64?, timeZone: String?, activityType: String?,
        activityID: String?, staleAt: Int64? = nil, activitiesEnabled: Bool? = nil, frequentPushesEnabled: Bool? = nil,
        pushEndpoint: String? = nil, pushP256dh: String? = nil, pushAuth: String? = nil
    ) throws {
        func corrupt(_ column: String) -> StoreError {
            StoreError(
                .corruptRecord,
                "The stored registration of a token has an unreadable \(column): repair or delete the row, or run a Herald that wrote it."
            )
        }
        guard let parsedToken = try? DeviceToken(hex: token) else { throw corrupt("token") }
        guard let parsedEnvironment = APNSEnvironment(name: environment) else { throw corrupt("environment") }
        guard let kind = TokenKind(name: tokenKind) else { throw corrupt("token_kind") }
        var installation: UUID?
        if let installationID {
            guard let parsed = UUID(text: installationID) else { throw corrupt("installation_id") }
            installation = parsed
        }
        var parsedPlatform: Platform?
        if let platform {
            guard let parsed = Platform(name: platform) else { throw corrupt("platform") }
            parsedPlatform = parsed
        }
        var webPush: WebPushSubscription?
        if let pushEndpoint {
            // The push-service list is checked when the subscription is used: it may have changed since.
            guard let pushP256dh, let pushAuth,
                let subscription = try? WebPushSubscription(
                    endpoint: pushEndpoint, p256dh: pushP256dh, auth: pushAuth, hosts: nil)
            else { throw corrupt("push_endpoint, push_p256dh or push_auth") }
            webPush = subscription
        }
        self.init(
            registration: TokenRegistration(
                token: parsedToken, topic: topic, environment: parsedEnvironment, tokenKind: kind, userID: userID,
                installationID: installation, preferredLanguages: preferredLanguages, appVersion: appVersion,
                platform: parsedPlatform, tags: tags, timeZone: timeZone, activityType: activityType,
                activityID: activityID, activitiesEnabled: activitiesEnabled,
                frequentPushesEnabled: frequentPushesEnabled, webPush: webPush),
            registeredAt: StoreTime.date(registeredAt), createdAt: StoreTime.date(createdAt),
            updatedAt: StoreTime.date(updatedAt),
            invalidation: invalidatedAt.map {
                TokenInvalidation(
                    reason: APNSReason(invalidationReason ?? ""), recordedAt: StoreTime.date($0),
                    apnsTimestamp: apnsTimestamp.map(StoreTime.date))
            }, staleSince: staleAt.map(StoreTime.date))
    }

    /// A new or updated record for a registration at a moment (times rounded as stored).
    package init(_ registration: TokenRegistration, registeredAt: Date, createdAt: Date) {
        let registeredAt = StoreTime.rounded(registeredAt)
        self.init(
            registration: registration, registeredAt: registeredAt, createdAt: StoreTime.rounded(createdAt),
            updatedAt: registeredAt)
    }
}
