import Foundation
public import HeraldCore
public import HeraldStore
public import Logging
public import ServiceLifecycle
import Synchronization

/// Delivers the outbox (docs/integrations.md): claims an endpoint whose events are due, posts up to
/// ``WebhookSettings/batchSize`` of them as one signed JSON array, and records how it went — delivered, a retry
/// after a backoff with jitter, or the endpoint paused and its events in the dead letter.
///
/// At least once: an event is marked delivered only after a 2xx, so a deliverer killed mid-post leaves the batch to
/// the next claim once its lease runs out (another instance, or this one restarted). In order per endpoint, hence
/// per send: an endpoint is one deliverer's at a time and its events go oldest first. Several instances on one
/// PostgreSQL database deliver different endpoints at once; none takes an endpoint another holds.
public final class WebhookDeliverer: Service, Sendable {
    private let store: any WebhookStore
    private let settings: WebhookSettings
    private let worker: String
    private let clock: any WallClock
    private let sleepClock: any Clock<Duration>
    private let jitter: WebhookJitter
    private let client: WebhookHTTPClient
    private let metrics: any WebhookMetrics
    private let storeReady: Gate
    private let logger: Logger
    private let recorded = Mutex<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    /// - Parameters:
    ///   - instance: The server instance's id: the deliverer's leases are held under it and a random suffix.
    ///   - clock: Record times, signatures' timestamps and backoffs are read from it.
    ///   - sleepClock: What an idle deliverer waits on between looks.
    public init(
        store: any WebhookStore, settings: WebhookSettings, instance: String, clock: any WallClock,
        sleepClock: any Clock<Duration>, jitter: WebhookJitter = WebhookJitter(),
        client: WebhookHTTPClient = WebhookHTTPClient(), metrics: any WebhookMetrics = NoWebhookMetrics(),
        storeReady: Gate, logger: Logger
    ) {
        self.store = store
        self.settings = settings
        self.worker = "\(instance)/webhooks/\(UUID().uuidString.prefix(8).lowercased())"
        self.clock = clock
        self.sleepClock = sleepClock
        self.jitter = jitter
        self.client = client
        self.metrics = metrics
        self.storeReady = storeReady
        self.logger = logger
    }

    public func run() async throws {
        guard settings.enabled else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            await self.storeReady.wait()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<max(1, self.settings.concurrency) {
                    group.addTask { await self.deliverUntilCancelled() }
                }
                group.addTask { await self.reportQueuesUntilCancelled() }
                await group.waitForAll()
            }
        }
    }

    private func deliverUntilCancelled() async {
        while !Task.isCancelled {
            let delivered = await deliverOnce()
            if !delivered { try? await sleepClock.sleep(for: settings.pollInterval) }
        }
    }

    private func reportQueuesUntilCancelled() async {
        while !Task.isCancelled {
            if let queues = try? await store.webhookQueues() {
                let now = clock.now()
                metrics.webhookQueues(
                    queues.mapValues { queue in
                        (
                            queue.pending,
                            queue.oldestPendingAt.map { Duration.seconds(max(0, now.timeIntervalSince($0))) },
                            queue.dead
                        )
                    })
            }
            try? await sleepClock.sleep(for: settings.pollInterval * 5)
        }
    }

    /// Claims one due endpoint and posts one batch to it. - Returns: `false` when nothing was due (or the store
    /// failed: it is logged, and tried again at the next look).
    @discardableResult
    public func deliverOnce() async -> Bool {
        let batch: WebhookBatch?
        do {
            batch = try await store.claimWebhookBatch(
                worker: worker, leaseUntil: clock.now().addingTimeInterval(Self.seconds(settings.lease)),
                limit: settings.batchSize)
        } catch {
            if !Task.isCancelled {
                logger.warning("Webhooks could not claim events; trying again", metadata: ["error": "\(error)"])
            }
            return false
        }
        guard var batch else { return false }
        // While the endpoint has a backlog, each delivered batch is recorded with the next one claimed in one write;
        // after a few, the endpoint is released so that others waiting for this deliverer get their turn.
        for chained in 1...Self.batchesPerClaim {
            guard !batch.events.isEmpty else {
                // Claimed between its last event's delivery and the release: give it back at once.
                _ = try? await store.recordWebhookAttempt(
                    WebhookAttempt(
                        endpointID: batch.endpoint.id, worker: worker, eventIDs: [], startedAt: clock.now(),
                        latency: .zero, statusCode: nil, error: nil, outcome: .delivered))
                return true
            }
            guard let next = await deliver(batch, claimingNext: chained < Self.batchesPerClaim) else { break }
            batch = next
        }
        return true
    }

    /// The most batches of one endpoint a deliverer posts in a row before it releases the endpoint.
    static let batchesPerClaim = 10

    /// Posts a batch and records how it went; with `claimingNext`, a delivered batch's record also claims the
    /// endpoint's next batch, which is returned.
    private func deliver(_ batch: WebhookBatch, claimingNext: Bool) async -> WebhookBatch? {
        let endpoint = batch.endpoint
        let body = JSONValue.array(batch.events.map(\.json)).sortedJSONBytes
        let started = clock.now()
        let timestamp = Int64(started.timeIntervalSince1970.rounded(.down))
        let headers = [
            (WebhookSignature.headerName, WebhookSignature.header(timestamp: timestamp, body: body, secrets: batch.secrets)),
            ("Herald-Webhook-Id", endpoint.id.uuidString.lowercased()),
            ("Herald-Event-Count", String(batch.events.count)),
        ]
        let measured = ContinuousClock.now
        var status: Int?
        var failure: String?
        if let url = URL(string: endpoint.url) {
            do {
                let answer = try await client.post(url: url, headers: headers, body: body, timeout: settings.timeout)
                status = answer.status
                switch answer.status {
                case 200..<300: break
                case 300..<400:
                    failure = "The endpoint answered \(answer.status): redirects are not followed, register the final URL."
                default:
                    failure = "The endpoint answered \(answer.status)" + (answer.body.isEmpty ? "." : ": \(answer.body)")
                }
            } catch is CancellationError {
                return nil
            } catch {
                failure = "\(error)"
            }
        } else {
            failure = "The URL cannot be read."
        }
        let latency = ContinuousClock.now - measured
        metrics.webhookDelivery(endpoint: endpoint.id, delivered: failure == nil, events: batch.events.count, latency: latency)
        let outcome: WebhookAttempt.Outcome
        if let failure {
            let failures = endpoint.consecutiveFailures + 1
            let failingSince = endpoint.firstFailureAt ?? started
            if failures >= settings.pauseAfterFailures,
                clock.now().timeIntervalSince(failingSince) >= Self.seconds(settings.pauseAfter)
            {
                outcome = .pause(
                    reason: "Paused after \(failures) failed deliveries in a row since \(RFC3339.string(failingSince)); the last: \(failure)")
                logger.warning(
                    "Webhook endpoint \(endpoint.id) paused after \(failures) failed deliveries; its waiting events are in the dead letter",
                    metadata: ["error": "\(failure)"])
            } else {
                let delay = jitter.apply(to: settings.backoff(afterFailures: failures))
                outcome = .retry(at: clock.now().addingTimeInterval(Self.seconds(delay)))
                logger.info(
                    "Webhook delivery to endpoint \(endpoint.id) failed (\(failures) in a row); retrying in \(delay)",
                    metadata: ["error": "\(failure)"])
            }
        } else {
            outcome = .delivered
        }
        let attempt = WebhookAttempt(
            endpointID: endpoint.id, worker: worker, eventIDs: batch.events.map(\.id), startedAt: started,
            latency: latency, statusCode: status, error: failure, outcome: outcome)
        do {
            if claimingNext, outcome == .delivered {
                let next = try await store.recordWebhookDeliveryAndClaimNext(
                    attempt, leaseUntil: clock.now().addingTimeInterval(Self.seconds(settings.lease)),
                    limit: settings.batchSize)
                attemptRecorded()
                return next
            }
            try await store.recordWebhookAttempt(attempt)
            attemptRecorded()
        } catch {
            // The lease runs out and the batch is claimed again: delivered twice at worst, never lost.
            if Task.isCancelled { return nil }
            logger.warning(
                "Webhooks could not record a delivery to endpoint \(endpoint.id); its events will be sent again",
                metadata: ["error": "\(error)"])
        }
        return nil
    }

    /// Returns once this deliverer has recorded `count` deliveries (delivered or not) since it started: for tests,
    /// which wait on it instead of sleeping.
    public func attemptsRecorded(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let reached = recorded.withLock { state -> Bool in
                if state.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if reached { continuation.resume() }
        }
    }

    private func attemptRecorded() {
        let ready = recorded.withLock { state in
            state.count += 1
            let count = state.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
