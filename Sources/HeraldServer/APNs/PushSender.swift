public import HeraldCore
public import HeraldStore

/// What the server sends through: one prepared notification to one token in one environment.
///
/// ``APNSSenders`` implements it over HeraldAPNS clients; tests may plug in anything. Implementations retry what the
/// APNs retry policy allows and return how the notification ended; they do not touch the registry.
public protocol PushSender: Sendable {
    /// Sends a notification and returns how it ended: accepted, rejected with APNs's reason, or failed.
    /// - Parameters:
    ///   - notification: Validated and encoded; its topic carries the push type's suffix.
    ///   - token: The device.
    ///   - environment: The host to send to: the token's recorded environment, or the other one when correcting a
    ///     `BadDeviceToken`.
    func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment) async
        -> DeliveryOutcome.Result
}
