import Foundation
package import HeraldCore
package import HeraldStore

/// Paces the push-to-start notifications of each app (`HERALD_PUSH_TO_START_RATE`, docs/live-activities.md,
/// "Push-to-start pace"): at most ``perSecond`` a second per app, counted in the store, so every send and every
/// instance of the app draws on one pace.
///
/// A send takes a small share of the second at a time (``share``), so sends that start together interleave rather
/// than one taking the whole second. A paced send runs in the background, as a send with a `rate` does: its caller
/// does not wait for the seconds it needs.
package struct PushToStartPacer: Sendable {
    let store: any Store
    /// Push-to-start notifications an app may send per second, across its sends and instances.
    package let perSecond: Int
    let clock: any WallClock
    let sleepClock: any Clock<Duration>
    let metrics: (any SendingMetrics)?

    /// - Parameters:
    ///   - perSecond: Push-to-start notifications per app and second; at least 1.
    ///   - clock: The time of day: which second a take counts in.
    ///   - sleepClock: What a send waits on until the next second when its app's second is spent.
    package init(
        store: any Store, perSecond: Int, clock: any WallClock, sleepClock: any Clock<Duration>,
        metrics: (any SendingMetrics)? = nil
    ) {
        precondition(perSecond > 0, "a push-to-start pace needs a positive rate")
        self.store = store
        self.perSecond = perSecond
        self.clock = clock
        self.sleepClock = sleepClock
        self.metrics = metrics
    }

    /// Whether a send is a Live Activity start on push-to-start tokens: what Apple throttles and this paces.
    package func applies(to plan: SendPlan) -> Bool {
        plan.pushType == .liveactivity && plan.query.activityType != nil
    }

    /// The most one take asks for: a tenth of the second, so ten takes a second per send at most.
    var share: Int { max(1, perSecond / 10) }

    /// Takes up to `wanted` (at most ``share``) starts from the app's current second; when the second is spent,
    /// waits until the next one and answers 0, so the caller asks again (and can stop in between).
    /// - Throws: A store error, or `CancellationError`.
    func take(_ wanted: Int, app: String) async throws -> Int {
        let pace = try await store.takePushToStartPace(
            topic: app, wanted: min(wanted, share), perSecond: perSecond, at: clock.now())
        metrics?.pushToStartPaced(app: app, granted: pace.granted, waited: pace.granted == 0)
        guard pace.granted == 0 else { return pace.granted }
        let untilNextSecond = pace.second.addingTimeInterval(1).timeIntervalSince(clock.now())
        // The second ended while the store answered: ask again at once rather than wait on the sleep clock.
        guard untilNextSecond > 0 else { return 0 }
        try await sleepClock.sleep(for: .microseconds(max(1, Int64(untilNextSecond * 1_000_000))))
        return 0
    }
}
