import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Prometheus
import ServiceLifecycle
import Testing

@testable import HeraldServer

@Suite("Retention service", .timeLimit(.minutes(1)))
struct RetentionTests {
    static let day: TimeInterval = 86_400

    @Test("waits for the store, deletes what is old in batches, counts it in /metrics, logs a line per run, runs again each interval and stops when cancelled", arguments: Backend.available)
    func service(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { url in
            let clock = ManualWallClock()
            let store = try StoreFactory.open(url: url, clock: clock)
            try await StoreConformance.withRunning(store) { store in
                // An old finished send with 5 outcomes, an old running one with 1, and an old invalidated token.
                let old = try await store.createSend(NewSend(target: "tag t", summary: "alert", status: .running))
                _ = try await store.recordOutcomes(
                    (1...5).map { StoreConformance.outcome($0, .accepted(apnsID: APNSID()), at: clock.now()) },
                    for: old.id, checkpoint: nil)
                _ = try await store.updateSend(old.id, SendUpdate(status: .completed))
                let running = try await store.createSend(NewSend(target: "topic", summary: "alert", status: .running))
                _ = try await store.recordOutcomes(
                    [StoreConformance.outcome(9, .accepted(apnsID: APNSID()), at: clock.now())], for: running.id,
                    checkpoint: nil)
                _ = try await store.upsert(StoreConformance.registration(20))
                _ = try await store.invalidate(token: StoreConformance.token(20), reason: .unregistered, at: nil)
                clock.advance(by: .seconds(40 * Self.day))

                let sleepClock = ManualClock()
                let registry = PrometheusCollectorRegistry()
                let logs = LogCapture()
                let ready = Gate()
                // No pause between batches: only the interval's sleep is on the manual clock.
                var settings = ServerConfiguration.Retention(batchSize: 2, batchPause: .zero)
                settings.consoleSessions = nil
                let service = RetentionService(
                    store: store, settings: settings, clock: clock, sleepClock: sleepClock, storeReady: ready,
                    metrics: ServerMetrics(registry: registry), logger: logs.logger())
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await service.run() }
                    ready.open()
                    let first = try await service.report(ofRun: 1)
                    #expect(
                        first.deleted == [.outcomes: 5, .receiptEvents: 0, .sends: 0, .invalidatedTokens: 1, .auditLog: 0])
                    #expect(try await store.send(old.id)?.counts.accepted == 5, "the send keeps its counts")
                    #expect(try await store.outcomes(of: running.id, after: nil, limit: 10).outcomes.count == 1)
                    #expect(try await store.device(StoreConformance.token(20)) == nil)
                    if backend == .sqlite { #expect(first.reclaimedBytes != nil, "a new SQLite database shrinks") }
                    let line = try await logs.waitForLine { $0.contains("Retention deleted") }
                    #expect(line.contains("5 outcomes, 0 receipt events, 0 sends, 1 invalidated tokens"), "\(line)")

                    let metrics = Self.metrics(registry)
                    #expect(metrics.contains(#"herald_retention_deleted_total{kind="outcomes"} 5"#), "\(metrics)")
                    #expect(metrics.contains(#"herald_retention_deleted_total{kind="invalidated_tokens"} 1"#))
                    #expect(
                        metrics.contains("herald_retention_last_run_timestamp_seconds \(Int(clock.now().timeIntervalSince1970))"),
                        "\(metrics)")

                    // Nothing more runs until the interval has passed.
                    await sleepClock.waitForSleepers(count: 1)
                    _ = try await store.updateSend(running.id, SendUpdate(status: .completed))
                    clock.advance(by: .seconds(100 * Self.day))
                    sleepClock.advance(by: settings.interval)
                    let second = try await service.report(ofRun: 2)
                    #expect(second.deleted[.outcomes] == 1, "the send that finished since is old now")
                    #expect(second.deleted[.sends] == 2, "both sends are older than 90 days, their outcomes gone")
                    #expect(try await store.send(old.id) == nil)

                    await sleepClock.waitForSleepers(count: 1)
                    group.cancelAll()
                    try await group.waitForAll()
                }
            }
        }
    }

    @Test("with everything kept forever the service deletes nothing and ends with the service group")
    func keepForever() async throws {
        let settings = ServerConfiguration.Retention(
            outcomes: nil, receiptEvents: nil, sends: nil, consoleSessions: nil, invalidatedTokens: nil, auditLog: nil)
        #expect(settings.ages.isEmpty)
        let store = try StoreFactory.open(url: "sqlite::memory:")
        let service = RetentionService(
            store: store, settings: settings, clock: ManualWallClock(), sleepClock: ManualClock(), storeReady: Gate(),
            metrics: ServerMetrics(registry: PrometheusCollectorRegistry()), logger: ServerHarness.quietLogger())
        let group = ServiceGroup(services: [service], logger: ServerHarness.quietLogger())
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    // Hung before: report(ofRun:) ignored cancellation, so a run that never came held the test past its time limit.
    @Test("a wait for a run that never comes ends when its task is cancelled")
    func cancelledReportWait() async throws {
        let store = try StoreFactory.open(url: "sqlite::memory:")
        let service = RetentionService(
            store: store, settings: ServerConfiguration.Retention(), clock: ManualWallClock(), sleepClock: ManualClock(),
            storeReady: Gate(), metrics: ServerMetrics(registry: PrometheusCollectorRegistry()),
            logger: ServerHarness.quietLogger())
        let waiting = Task { try await service.report(ofRun: 1) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
    }

    @Test("outcomes and receipt events are kept no longer than their sends")
    func ages() {
        let settings = ServerConfiguration.Retention(
            outcomes: nil, receiptEvents: .seconds(100 * Self.day), sends: .seconds(60 * Self.day))
        let ages = Dictionary(uniqueKeysWithValues: settings.ages.map { ($0.kind, $0.age) })
        #expect(ages[.outcomes] == .seconds(60 * Self.day))
        #expect(ages[.receiptEvents] == .seconds(60 * Self.day))
        #expect(ages[.consoleSessions] == .seconds(7 * Self.day))
    }

    @Test("a period of send records lasts an eighth of the outcomes' age, between an hour and a day; none when outcomes stay")
    func sendRecordPeriod() {
        #expect(ServerConfiguration.Retention().sendRecordPeriod == .seconds(Self.day))
        #expect(ServerConfiguration.Retention(outcomes: .seconds(4 * Self.day)).sendRecordPeriod == .seconds(Self.day / 2))
        #expect(ServerConfiguration.Retention(outcomes: .seconds(3_600)).sendRecordPeriod == .seconds(3_600))
        #expect(ServerConfiguration.Retention(outcomes: nil, sends: .seconds(16 * Self.day)).sendRecordPeriod == .seconds(Self.day))
        #expect(ServerConfiguration.Retention(outcomes: nil, sends: nil).sendRecordPeriod == nil)
    }

    static func metrics(_ registry: PrometheusCollectorRegistry) -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
