public import HeraldCore

extension Registration {
    /// The registration of this installation's push-to-start token for one `ActivityAttributes` type
    /// (`Activity<DeliveryAttributes>.pushToStartTokenUpdates`, iOS 17.2+).
    ///
    /// Everything that describes the installation (environment, topic, user, languages, app version, platform,
    /// installation id, tags, time zone) is copied from this registration, typically the device token's, so the server
    /// can reach the same user and devices; the token, kind and activity fields are replaced.
    /// - Parameters:
    ///   - token: the push-to-start token.
    ///   - activityType: the name of the attributes type the token starts, as the server will send it in
    ///     `attributes-type`: `String(describing: DeliveryAttributes.self)`.
    public func forPushToStartToken(_ token: DeviceToken, activityType: String) -> Registration {
        forToken(token, kind: .liveActivityStart, activityType: activityType, activityID: nil)
    }

    /// The registration of one running activity's update token (`activity.pushTokenUpdates`).
    ///
    /// Copies the installation's fields as ``forPushToStartToken(_:activityType:)`` does. Registering a new token
    /// with the same `activityID` replaces the activity's previous one on the server.
    /// - Parameters:
    ///   - token: the activity's current update token.
    ///   - activityID: the app's own id of the activity, by which the server updates and ends it (1 to 256 bytes, no
    ///     control characters).
    public func forActivityUpdateToken(_ token: DeviceToken, activityID: String) -> Registration {
        forToken(token, kind: .liveActivity, activityType: nil, activityID: activityID)
    }

    /// The installation's fields with another token's own.
    private func forToken(
        _ token: DeviceToken, kind: TokenKind, activityType: String?, activityID: String?
    ) -> Registration {
        var registration = self
        registration.token = token
        registration.tokenKind = kind
        registration.activityType = activityType
        registration.activityID = activityID
        return registration
    }
}
