public import HeraldCore
public import HeraldStore

/// What the server sends through: one prepared notification to one token in one environment.
///
/// The server implements it over HeraldAPNS clients (one per app and environment); tests may plug in anything. Implementations retry what the
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

    /// Starts a send without a task when that is possible right now, for the fan-out's bulk loop.
    ///
    /// Calls `answered` once (from any thread; it must not block) with the end, or with the rest of the work to run in
    /// a task (retries).
    /// - Returns: `false` when the send could not start without waiting: nothing was sent, and the caller uses
    ///   ``send(_:to:in:)`` from a task. The default implementation always answers `false`.
    func start(
        _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
        answered: @escaping @Sendable (StartedSend) -> Void
    ) -> Bool
}

extension PushSender {
    public func start(
        _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
        answered: @escaping @Sendable (StartedSend) -> Void
    ) -> Bool { false }
}

/// How a send started with ``PushSender/start(_:to:in:answered:)`` went.
public enum StartedSend: Sendable {
    /// It ended.
    case finished(DeliveryOutcome.Result)
    /// It goes on (a retry): run this in a task for its end.
    case continuing(@Sendable () async -> DeliveryOutcome.Result)
}
