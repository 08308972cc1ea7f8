extension APS {
    /// Checks the Live Activity rules of apns-protocol.md §4.5: an `event`, a `timestamp` and a `content-state`;
    /// for `start` also `attributes-type`, `attributes` and an alert; the start-only keys only on `start`,
    /// `dismissal-date` only on `end`, and not both `input-push-token` and `input-push-channel`.
    ///
    /// The send path runs the same check for `apns-push-type: liveactivity`; the app SDK runs it on what it decodes.
    /// - Throws: ``NotificationValidationError`` (`liveActivity`) naming the key at fault.
    public func validateLiveActivity() throws(NotificationValidationError) {
        try NotificationValidator.checkLiveActivity(self)
    }
}
