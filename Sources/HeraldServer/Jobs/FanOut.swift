import DequeModule
import Foundation
import HeraldCore
import HeraldStore

/// Performs one send: walks its target page by page after a checkpoint, keeps up to `maximumInFlight` notifications
/// in flight across page boundaries, and records outcomes in order, one transaction per batch, with the checkpoint of
/// the last whole page.
///
/// Memory stays bounded whatever the target's size: at most two pages wait to be sent, outcomes are kept only until
/// their page is recorded, and no page is fetched while four pages of outcomes wait to be recorded. A resumed send starts after the last recorded page, so a crash re-sends at most the
/// pages that were in flight (at-least-once). Runs as one task group: the page fetch, the sends and the recording
/// overlap, and nothing outlives the call.
struct FanOut: Sendable {
    let store: any Store
    let delivery: Delivery
    let pageSize: Int
    let maximumInFlight: Int
    let clock: any WallClock

    /// A background send's lease, renewed at a third of its duration.
    struct Lease: Sendable {
        let worker: String
        let duration: Duration
    }

    /// How a run ended.
    struct Result: Sendable {
        /// Whether every page was sent and recorded; `false` when asked to stop.
        var finished: Bool
        /// The send's counts, as recorded.
        var counts: OutcomeCounts
        /// Every outcome, in the order they came, when collecting (inline sends).
        var outcomes: [ReportedOutcome]
    }

    /// Another worker holds the send now: this one must stop.
    struct LeaseLost: Error {}

    private enum Event: Sendable {
        case page(DevicePage)
        case delivered(page: Int, ReportedOutcome)
        case recorded(OutcomeCounts)
    }

    private struct PageProgress {
        var remaining: Int
        var outcomes: [DeliveryOutcome]
        var checkpoint: DeviceCursor?
    }

    /// Runs the send.
    /// - Parameters:
    ///   - checkpoint: Where a resumed send starts; `nil` from the beginning.
    ///   - lease: The background worker's lease to keep renewing; `nil` for an inline send.
    ///   - collect: Whether to return every outcome (inline sends only: a small target).
    ///   - shouldStop: Checked between events; once `true`, no more pages are fetched, and the pages already fetched
    ///     are finished and recorded (graceful shutdown).
    /// - Throws: ``LeaseLost``, a store error, or `CancellationError`.
    func run(
        _ plan: SendPlan, send id: SendID, after checkpoint: DeviceCursor?, lease: Lease?, collect: Bool,
        shouldStop: @escaping @Sendable () -> Bool = { false }
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Event.self) { group in
            var cursor = checkpoint
            var exhausted = false
            var fetching = false
            var pagesFetched = 0
            var queue = Deque<(page: Int, device: DeviceRegistration)>()
            var inFlight = 0
            var progress: [Int: PageProgress] = [:]
            var nextToRecord = 0
            var ready: [DeliveryOutcome] = []
            var readyCheckpoint: DeviceCursor?
            var hasReady = false
            var recording = false
            var result = Result(finished: false, counts: OutcomeCounts(), outcomes: [])
            var lastRenewal = clock.now()
            var stopping = false

            while true {
                if !stopping, shouldStop() { stopping = true }
                while inFlight < maximumInFlight, let next = queue.popFirst() {
                    let notification = plan.notification(for: next.device)
                    let device = next.device
                    group.addTask { .delivered(page: next.page, await delivery.deliver(notification, to: device)) }
                    inFlight += 1
                }
                // Back-pressure: when recording falls behind sending, stop fetching until it catches up.
                if !fetching, !exhausted, !stopping, queue.count < pageSize, ready.count < 4 * pageSize {
                    let after = cursor
                    group.addTask {
                        .page(try await store.devices(matching: plan.query, after: after, limit: pageSize))
                    }
                    fetching = true
                }
                if !recording, hasReady {
                    let batch = ready
                    let batchCheckpoint = readyCheckpoint
                    ready = []
                    readyCheckpoint = nil
                    hasReady = false
                    group.addTask {
                        .recorded(try await store.recordOutcomes(batch, for: id, checkpoint: batchCheckpoint))
                    }
                    recording = true
                }
                guard let event = try await group.next() else { break }
                switch event {
                case .page(let page):
                    fetching = false
                    cursor = page.next
                    exhausted = page.next == nil
                    progress[pagesFetched] = PageProgress(
                        remaining: page.devices.count, outcomes: [], checkpoint: page.next)
                    for device in page.devices { queue.append((pagesFetched, device)) }
                    pagesFetched += 1
                case .delivered(let page, let reported):
                    inFlight -= 1
                    progress[page]!.remaining -= 1
                    progress[page]!.outcomes.append(reported.outcome)
                    if collect { result.outcomes.append(reported) }
                case .recorded(let counts):
                    recording = false
                    result.counts = counts
                }
                // Whole pages, in order, become one recording batch with the checkpoint after the last of them.
                while let page = progress[nextToRecord], page.remaining == 0 {
                    ready.append(contentsOf: page.outcomes)
                    if let checkpoint = page.checkpoint { readyCheckpoint = checkpoint }
                    hasReady = hasReady || !page.outcomes.isEmpty || page.checkpoint != nil
                    progress[nextToRecord] = nil
                    nextToRecord += 1
                }
                if let lease, clock.now() >= lastRenewal.addingTimeInterval(Self.seconds(lease.duration) / 3) {
                    lastRenewal = clock.now()
                    let until = lastRenewal.addingTimeInterval(Self.seconds(lease.duration))
                    guard try await store.renewLease(of: id, worker: lease.worker, until: until) else {
                        throw LeaseLost()
                    }
                }
            }
            result.finished = exhausted
            return result
        }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
