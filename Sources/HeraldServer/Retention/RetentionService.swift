import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Logging
import ServiceLifecycle
import Synchronization

/// Deletes what is older than the configured ages (``ServerConfiguration/Retention``), then gives the space back.
///
/// Once the store is migrated, and then every ``ServerConfiguration/Retention/interval``, a run first begins a new
/// period of send records when the open one has lasted ``ServerConfiguration/Retention/sendRecordPeriod``
/// (PostgreSQL's partitions, dropped whole by the deletion of outcomes; docs/storage.md), then deletes each kind in
/// batches of ``ServerConfiguration/Retention/batchSize`` rows, each batch its own short transaction with a short
/// pause after it, until a batch finds nothing more: SQLite commits registrations and sends between two batches (its
/// group commit queues them in arrival order), and PostgreSQL runs them beside it. Several instances on one PostgreSQL database may run at
/// once: a batch that finds another instance's batch under way leaves the kind to it (``RetentionStore``). A run
/// that fails logs a warning and is tried again at the next interval.
final class RetentionService: Service, Sendable {
    /// What one run did.
    struct Report: Sendable, Hashable {
        var deleted: [RetentionKind: Int] = [:]
        /// Idempotency keys whose window ended.
        var idempotencyKeys = 0
        /// Delivered webhook events and deliveries older than their age.
        var webhookRecords = 0
        /// Frequency cap counters whose window ended.
        var frequencyWindows = 0
        /// Bytes given back to the file system; `nil` when the database cannot give any back.
        var reclaimedBytes: Int64? = 0
    }

    /// Bytes given back per write: about a millisecond of page moves on SQLite, so nothing waits long behind one.
    static let reclaimChunk: Int64 = 1 << 20

    private let store: any RetentionStore & IdempotencyStore & WebhookStore & FrequencyCapStore
    private let settings: ServerConfiguration.Retention
    private let clock: any WallClock
    private let sleepClock: any Clock<Duration>
    private let storeReady: Gate
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Every run's report, in order.
    private let runs = WatchedState<[Report]>([], readyWhen: { _ in false })
    private let warnedAboutVacuum = Mutex(false)

    init(
        store: any RetentionStore & IdempotencyStore & WebhookStore & FrequencyCapStore, settings: ServerConfiguration.Retention, clock: any WallClock,
        sleepClock: any Clock<Duration>, storeReady: Gate, metrics: ServerMetrics, logger: Logger
    ) {
        self.store = store
        self.settings = settings
        self.clock = clock
        self.sleepClock = sleepClock
        self.storeReady = storeReady
        self.metrics = metrics
        self.logger = logger
    }

    func run() async throws {
        guard !settings.ages.isEmpty else {
            // A service that returns ends the server's service group: wait for the shutdown instead.
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            await self.storeReady.wait()
            while !Task.isCancelled {
                let report = await self.runOnce()
                self.finished(report)
                try await self.sleepClock.sleep(for: self.settings.interval)
            }
        }
    }

    /// Returns the report of the `count`-th run (counting from 1) once it has ended: for tests, which wait on it
    /// instead of sleeping.
    /// - Throws: `CancellationError` when the task is cancelled first.
    func report(ofRun count: Int) async throws(CancellationError) -> Report {
        guard let reports = await runs.wait(until: { $0.count >= count }) else { throw CancellationError() }
        return reports[count - 1]
    }

    private func finished(_ report: Report) {
        runs.update { $0.append(report) }
    }

    /// Deletes each kind's expired rows, then gives the space back; logs what it did. Stops early when cancelled.
    func runOnce() async -> Report {
        let started = ContinuousClock.now
        let now = clock.now()
        var report = Report()
        if let period = settings.sendRecordPeriod {
            do {
                if try await store.rollSendRecordPeriod(every: period) {
                    logger.info("Retention began a new period of send records", metadata: ["length": "\(period)"])
                }
            } catch {
                if Task.isCancelled { return report }
                logger.warning(
                    "Retention could not begin a new period of send records; it tries again in \(settings.interval)",
                    metadata: [LogKey.error: "\(error)"])
            }
        }
        for (kind, age) in settings.ages {
            let cutoff = now.addingTimeInterval(-Self.seconds(age))
            do {
                var batch: RetentionBatch
                repeat {
                    batch = try await store.deleteExpired(kind, before: cutoff, limit: settings.batchSize)
                    report.deleted[kind, default: 0] += batch.deleted
                    if batch.deleted > 0 { metrics.retentionDeleted(kind, batch.deleted) }
                    if !batch.finished, settings.batchPause > .zero {
                        try await sleepClock.sleep(for: settings.batchPause)
                    }
                } while !batch.finished && !Task.isCancelled
            } catch {
                if Task.isCancelled { return report }
                logger.warning(
                    "Retention could not delete expired \(kind.words); it tries again in \(settings.interval)",
                    metadata: [LogKey.error: "\(error)"])
            }
            if Task.isCancelled { return report }
        }
        // Answers kept for Idempotency-Key retries, once their window (HERALD_IDEMPOTENCY_WINDOW) ended.
        do {
            var deleted: Int
            repeat {
                deleted = try await store.purgeIdempotencyKeys(expiredBefore: now, limit: settings.batchSize)
                report.idempotencyKeys += deleted
            } while deleted == settings.batchSize && !Task.isCancelled
        } catch {
            if Task.isCancelled { return report }
            logger.warning(
                "Retention could not delete expired idempotency keys; it tries again in \(settings.interval)",
                metadata: [LogKey.error: "\(error)"])
        }
        if let age = settings.webhookDeliveries {
            do {
                var deleted: Int
                repeat {
                    deleted = try await store.purgeWebhookHistory(
                        before: now.addingTimeInterval(-Self.seconds(age)), limit: settings.batchSize)
                    report.webhookRecords += deleted
                } while deleted > 0 && !Task.isCancelled
            } catch {
                if Task.isCancelled { return report }
                logger.warning(
                    "Retention could not delete delivered webhook events; it tries again in \(settings.interval)",
                    metadata: [LogKey.error: "\(error)"])
            }
        }
        // Frequency cap counters, once their window ended: a new window counts from zero anyway.
        do {
            var deleted: Int
            repeat {
                deleted = try await store.purgeFrequencyWindows(endedBefore: now, limit: settings.batchSize)
                report.frequencyWindows += deleted
            } while deleted == settings.batchSize && !Task.isCancelled
        } catch {
            if Task.isCancelled { return report }
            logger.warning(
                "Retention could not delete ended frequency cap windows; it tries again in \(settings.interval)",
                metadata: [LogKey.error: "\(error)"])
        }
        report.reclaimedBytes = await reclaimSpace()
        let duration = started.duration(to: .now)
        metrics.retentionRan(at: clock.now(), duration: duration)
        let counts = (settings.ages.map { "\(report.deleted[$0.kind] ?? 0) \($0.kind.words)" }
            + ["\(report.idempotencyKeys) expired idempotency keys", "\(report.webhookRecords) webhook records",
                "\(report.frequencyWindows) frequency cap windows"]).joined(separator: ", ")
        let reclaimed = report.reclaimedBytes.flatMap { $0 > 0 ? "; gave back \(Self.megabytes($0)) to the file system" : nil } ?? ""
        logger.info(
            "Retention deleted \(counts) in \(String(format: "%.1f", Self.seconds(duration))) s\(reclaimed)",
            metadata: [
                LogKey.retentionDeleted: .dictionary(
                    Dictionary(uniqueKeysWithValues: report.deleted.map { ($0.key.rawValue, .stringConvertible($0.value)) })),
                LogKey.reclaimedBytes: "\(report.reclaimedBytes ?? 0)",
            ])
        return report
    }

    /// Gives free space back a chunk at a time until none is left; `nil` when the database cannot (warned once).
    private func reclaimSpace() async -> Int64? {
        var total: Int64 = 0
        do {
            while !Task.isCancelled {
                guard let bytes = try await store.reclaimSpace(maximumBytes: Self.reclaimChunk) else {
                    let warned = warnedAboutVacuum.withLock { warned in
                        defer { warned = true }
                        return warned
                    }
                    if !warned {
                        logger.warning(
                            "The SQLite database was created before Herald gave space back (auto_vacuum is not incremental): retention's deletions are reused by new rows, but the file does not shrink. To shrink it, stop the server and run herald vacuum once (it rewrites the file and needs as much free disk as the file's size)."
                        )
                    }
                    return nil
                }
                total += bytes
                if bytes < Self.reclaimChunk { break }
            }
        } catch {
            if !Task.isCancelled {
                logger.warning(
                    "Retention could not give free space back; it tries again in \(settings.interval)",
                    metadata: [LogKey.error: "\(error)"])
            }
        }
        return total
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }
}
