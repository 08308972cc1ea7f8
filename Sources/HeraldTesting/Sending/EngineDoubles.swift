import Dispatch
package import Foundation
package import HeraldAPNS
package import HeraldCore
package import HeraldSending
package import HeraldStore
import Logging
import Synchronization

/// The send engine without a server: a fan-out over a real store, with the senders below in place of APNs.
package enum EngineTesting {
    /// A fan-out over `store` that sends through `sender`, 50 devices a page.
    package static func fanOut(
        _ store: any Store, _ sender: any PushSender, maximumInFlight: Int, metrics: any SendingMetrics = UncountedMetrics()
    ) -> FanOut {
        let clock = SystemWallClock()
        let delivery = Delivery(
            store: store, sender: sender, metrics: metrics, logger: Logger(label: "herald.test.engine"), clock: clock)
        return FanOut(store: store, delivery: delivery, pageSize: 50, maximumInFlight: maximumInFlight, clock: clock)
    }

    /// A broadcaster with no APNs client: for engine tests that queue no broadcast.
    package static func noBroadcasts(_ store: any Store, metrics: any SendingMetrics = UncountedMetrics()) -> Broadcaster {
        Broadcaster(store: store, client: { _, _ in nil }, metrics: metrics)
    }

    /// A worker over `store` as `herald serve` builds one, serving `apps`, whose polls never come during a test: it
    /// runs what ``queueAlert(_:to:of:count:in:)`` stores when it is woken.
    package static func worker(
        _ store: any Store, fanOut: FanOut, apps: Set<String>, pageSize: Int = 50, maximumInFlight: Int,
        shutdownGrace: Duration = .seconds(5), instance: String = "engine-test"
    ) -> SendWorker {
        var sending = SendingSettings(pageSize: pageSize, maximumInFlight: maximumInFlight)
        sending.pollInterval = .seconds(3600)
        sending.shutdownGrace = shutdownGrace
        let ready = Gate()
        ready.open()
        return SendWorker(
            store: store, servedApps: apps, legacyJobs: NoLegacyJobs(), fanOut: fanOut,
            broadcaster: noBroadcasts(store), sending: sending, instance: instance, clock: ContinuousClock(),
            wallClock: SystemWallClock(), storeReady: ready, logger: Logger(label: "herald.test.worker"))
    }

    /// Queues a send of one alert to the devices of `app` a query selects, as the engine stores a background send.
    package static func queueAlert(
        _ text: String = "hi", to query: DeviceQuery, of app: String, count: Int, in store: any Store
    ) async throws -> SendRecord {
        let job = try alertJob(text, to: query.inTopic(app), of: app, target: "\(query)")
        return try await store.createSend(
            NewSend(target: "\(query)", summary: "alert push", job: job.jsonText, targetCount: count, topic: app))
    }

    /// Registers production devices of `app` with the tokens ``StoreConformance/token(_:)`` numbers.
    @discardableResult
    package static func registerDevices(_ numbers: ClosedRange<Int>, of app: String, in store: any Store) async throws
        -> [DeviceToken]
    {
        let tokens = numbers.map { StoreConformance.token($0) }
        for token in tokens {
            _ = try await store.upsert(TokenRegistration(token: token, topic: app, environment: .production))
        }
        return tokens
    }

    /// A plan that sends one alert to every device of `app`, as a stored job would run it.
    package static func alertToEveryDevice(of app: String, send: SendID, text: String = "hi") throws -> SendPlan {
        SendPlan(
            job: try alertJob(text, to: .topic(app), of: app, target: "every device of \(app)"), sendID: send, at: Date())
    }

    /// The job of one alert to the devices a query selects.
    private static func alertJob(_ text: String, to query: DeviceQuery, of app: String, target: String) throws
        -> SendJob
    {
        let notification = try PushNotification(
            Payload(aps: APS(alert: .body(text))), pushType: .alert, topic: app
        ).prepare()
        return SendJob(
            bundleID: app, query: query, pushType: .alert, schedule: nil, rate: nil, targetDescription: target,
            summary: "alert push", notifications: ["": notification], stampsTimestamp: false)
    }
}

/// Reads no version-1 job: engine tests store only today's jobs.
package struct NoLegacyJobs: LegacyJobReader {
    package init() {}

    package func job(fromRequestBody body: JSONValue, sendID: SendID, at now: Date) async throws(SendJobError)
        -> StoredJob
    {
        throw .noLongerValid("Engine tests store no version-1 jobs.", sendID: sendID)
    }
}

/// Counts nothing: for engine tests that read their results from the store and the sender.
package struct UncountedMetrics: SendingMetrics {
    package init() {}
    package func outcome(_ result: DeliveryOutcome.Result) {}
    package func webPushOutcome(_ result: DeliveryOutcome.Result) {}
    package func cancelled() {}
    package func removal(_ reason: APNSReason) {}
    package func environmentCorrected() {}
    package func activityPush(event: String, priority: Int, via route: ActivityRoute) {}
    package func sendsRunning(_ counts: [SendLane: Int]) {}
    package func sendsWaiting(_ lanes: [SendLane: WaitingSends], at now: Date) {}
    package func storeFailed() {}
    package func storeOutage(ended: Bool) {}
    package func sendClaimed(lane: SendLane, shard: Bool, resumed: Bool) {}
    package func sendStarted(background: Bool) {}
    package func suppressed(_ counts: SuppressedCounts) {}
    package func pushToStartPaced(app: String, granted: Int, waited: Bool) {}
}

/// A sender that answers the first `answering` notifications and then holds every later one until its task is
/// cancelled (the process dies): what a send looks like when `kill -9` arrives. ``release()`` lets the held ones (and
/// any later ones) through, accepted.
package final class StallingSender: PushSender {
    package let answering: Int
    /// How many notifications are held, unanswered.
    package let held = CountSignal()
    private let log = Mutex<(sent: [(token: DeviceToken, apnsID: APNSID?)], held: Int)>(([], 0))
    private let released = Gate()

    package init(answering: Int) { self.answering = answering }

    package var sent: [(token: DeviceToken, apnsID: APNSID?)] { log.withLock { $0.sent } }

    /// Answers the held notifications, and every later one, at once.
    package func release() { released.open() }

    package func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment)
        async -> PushResult
    {
        let (number, heldNow) = log.withLock { log in
            log.sent.append((token, notification.apnsID))
            if log.sent.count > answering { log.held += 1 }
            return (log.sent.count, log.held)
        }
        if number <= answering { return PushResult(.accepted(apnsID: notification.apnsID ?? APNSID())) }
        held.update(heldNow)
        // Held until released, or until the run is cancelled (the process died, or the send was cancelled): then as a
        // sender over APNs answers, with no outcome.
        await released.wait()
        if Task.isCancelled { return .cancelled("cancelled while APNs held it") }
        return PushResult(.accepted(apnsID: notification.apnsID ?? APNSID()))
    }
}

/// Refuses every third device in `start` (as a sender with no free stream does), answers the others from another
/// thread, and asks for a task for every fifth (a retry); 410 for multiples of 7, accepted otherwise.
package final class BulkSender: PushSender {
    private let log = Mutex<(started: [Int], sent: [Int], inFlight: Int, mostInFlight: Int)>(([], [], 0, 0))
    private let answers = DispatchQueue(label: "herald.test.answers")

    package init() {}

    package var started: [Int] { log.withLock { $0.started } }
    package var sent: [Int] { log.withLock { $0.sent } }
    package var mostInFlight: Int { log.withLock { $0.mostInFlight } }

    /// The number a test token stands for (its last 8 hex digits).
    package static func number(_ token: DeviceToken) -> Int { Int(token.hex.suffix(8), radix: 16)! }

    package static func result(_ n: Int) -> DeliveryOutcome.Result {
        n.isMultiple(of: 7) ? .rejected(status: 410, reason: .unregistered, timestamp: nil) : .accepted(apnsID: APNSID())
    }

    package func send(_ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment)
        async -> PushResult
    {
        let n = Self.number(token)
        log.withLock { $0.sent.append(n) }
        return PushResult(Self.result(n))
    }

    package func start(
        _ notification: PreparedNotification, to token: DeviceToken, in environment: APNSEnvironment,
        cancellation: APNSCancellation, answered: @escaping @Sendable (APNSStarted<PushResult>) -> Void
    ) -> Bool {
        let n = Self.number(token)
        guard !n.isMultiple(of: 3) else { return false }
        log.withLock {
            $0.started.append(n)
            $0.inFlight += 1
            $0.mostInFlight = max($0.mostInFlight, $0.inFlight)
        }
        answers.async {
            self.log.withLock { $0.inFlight -= 1 }
            if n.isMultiple(of: 5) {
                answered(.continuing { PushResult(Self.result(n)) })
            } else {
                answered(.finished(PushResult(Self.result(n))))
            }
        }
        return true
    }
}
