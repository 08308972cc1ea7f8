package import Foundation
package import HeraldCore
package import HeraldStore

/// What the send engine counts, for `/metrics`: the server implements it over its Prometheus registry.
///
/// Called from the event loop and from many tasks at once: an implementation must not block.
package protocol SendingMetrics: Sendable {
    /// One notification's outcome, after the sender's retries.
    func outcome(_ result: DeliveryOutcome.Result)
    /// One Web Push message's outcome (a `webpush` device's), after the sender's retries: counted apart from APNs's.
    func webPushOutcome(_ result: DeliveryOutcome.Result)
    /// A notification whose send was cancelled (by `DELETE /api/sends/{id}`, or by a shutdown past its grace) before
    /// APNs answered: it has no outcome, and a resumed send sends it again.
    func cancelled()
    /// A token taken out of sends, per APNs reason (`Unregistered`, `ExpiredToken`, `BadDeviceToken`).
    func removal(_ reason: APNSReason)
    /// A `BadDeviceToken` token that the other environment accepted, and moved there.
    func environmentCorrected()
    /// A Live Activity start, update or end sent, by event, priority and route.
    func activityPush(event: String, priority: Int, via route: ActivityRoute)
    /// The background sends this instance runs now, per lane.
    func sendsRunning(_ counts: [SendLane: Int])
    /// The sends waiting in the store's queue, per lane, and how long the oldest of each lane has waited at `now`.
    func sendsWaiting(_ lanes: [SendLane: WaitingSends], at now: Date)
    /// The store failed an operation the engine needed (a claim, a look at the queue, a record).
    func storeFailed()
    /// Send work began (`ended` false) or stopped (`ended` true) waiting for a database that is away
    /// (``StoreOutage``): a gauge of the work paused now.
    func storeOutage(ended: Bool)
    /// A claim of a whole send or of one shard; `resumed` when it had outcomes or a checkpoint already (a restart, or a
    /// lease that ran out: a take-over).
    func sendClaimed(lane: SendLane, shard: Bool, resumed: Bool)
    /// A send accepted: sent while its request waited, or queued for a worker.
    func sendStarted(background: Bool)
    /// Devices a send accepted now left out by a rule about their person, by rule.
    func suppressed(_ counts: SuppressedCounts)
    /// A take from an app's push-to-start pace: the starts it granted, and whether the second was spent so the send
    /// waited for the next one (``PushToStartPacer``).
    func pushToStartPaced(app: String, granted: Int, waited: Bool)
}

/// How a Live Activity push reached its devices: one request per device token, or one broadcast on a channel.
package enum ActivityRoute: String, Sendable {
    case devices
    case channel
}
