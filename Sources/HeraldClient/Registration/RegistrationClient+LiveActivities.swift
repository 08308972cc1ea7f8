public import HeraldCore

extension RegistrationClient {
    /// Uploads a push-to-start token so the server can start an activity of `activityType` on this device.
    ///
    /// Call it with every token `Activity<Attributes>.pushToStartTokenUpdates` delivers (it delivers the current one
    /// at each launch): registration is an idempotent upsert, like the device token's.
    /// - Parameters:
    ///   - token: the push-to-start token.
    ///   - activityType: the `ActivityAttributes` type's name, such as `String(describing: DeliveryAttributes.self)`.
    ///   - installation: this installation's registration (usually the device token's): its environment, topic, user,
    ///     installation id and the rest are sent with the token.
    /// - Returns: the server's answer, as ``register(_:)`` returns it.
    /// - Throws: ``RegistrationError`` as ``register(_:)`` does; `invalidRegistration` names `activityType` when it is
    ///   empty or not a type name.
    @discardableResult
    public func registerPushToStartToken(
        _ token: DeviceToken, activityType: String, installation: Registration
    ) async throws(RegistrationError) -> RegistrationReceipt {
        try await register(installation.forPushToStartToken(token, activityType: activityType))
    }

    /// Uploads the update token of one running activity, keyed by the app's id of the activity.
    ///
    /// Call it with every token `activity.pushTokenUpdates` delivers: a new token for the same `activityID` replaces
    /// the old one on the server.
    /// - Parameters:
    ///   - token: the activity's update token.
    ///   - activityID: the app's own id of the activity (1 to 256 bytes, no control characters).
    ///   - installation: this installation's registration, as for
    ///     ``registerPushToStartToken(_:activityType:installation:)``.
    /// - Returns: the server's answer, as ``register(_:)`` returns it.
    /// - Throws: ``RegistrationError`` as ``register(_:)`` does; `invalidRegistration` names `activityId` when it is
    ///   empty, too long or holds a control character.
    @discardableResult
    public func registerActivityUpdateToken(
        _ token: DeviceToken, activityID: String, installation: Registration
    ) async throws(RegistrationError) -> RegistrationReceipt {
        try await register(installation.forActivityUpdateToken(token, activityID: activityID))
    }

    /// Tells the server that an activity ended on this device, so it stops sending to its update token.
    ///
    /// This is ``unregister(_:)`` under the name the Live Activity code reads: the server removes registrations by
    /// token, and a failure that may pass is saved for ``retryPending()`` the same way.
    /// - Parameter updateToken: the last update token the activity had.
    /// - Returns: `true` when the server removed the token, `false` when it did not know it.
    /// - Throws: ``RegistrationError`` as ``unregister(_:)`` does.
    @discardableResult
    public func activityEnded(updateToken: DeviceToken) async throws(RegistrationError) -> Bool {
        try await unregister(updateToken)
    }
}
