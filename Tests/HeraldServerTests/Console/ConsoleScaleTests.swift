import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldServer

/// What keeps the console's pages quick with millions of devices (scripts/bench-console.py measures them): device
/// figures counted once while counting is slow, and ended sends' outcome groups counted once.
@Suite("Console: pages at scale", .timeLimit(.minutes(1)))
struct ConsoleScaleTests {
    @Test("a quick count is repeated on every view; a slow one is shown again until it is older than the idle limit")
    func deviceFigures() async throws {
        try await TestDatabase.withMigratedStore(.sqlite) { store in
            let clock = ManualWallClock()
            let logger = ServerHarness.quietLogger()
            func register(_ n: Int) async throws {
                _ = try await store.upsert(
                    TokenRegistration(token: StoreConformance.token(n), topic: ServerHarness.topic, environment: .production))
            }
            let quick = DeviceFigures(store: store, clock: clock, logger: logger, quickCount: .seconds(3600))
            try await register(1)
            #expect(try await quick.snapshot().devices.total == 1)
            try await register(2)
            let fresh = try await quick.snapshot()
            #expect(fresh.devices.total == 2 && !fresh.fromCache, "a small registry is counted on every view")

            // Every count is slow: the figures are shown as counted, and say when.
            let slow = DeviceFigures(store: store, clock: clock, logger: logger, quickCount: .zero)
            let first = try await slow.snapshot()
            #expect(first.devices.total == 2 && !first.fromCache)
            try await register(3)
            clock.advance(by: .seconds(30))
            let cached = try await slow.snapshot()
            #expect(cached.devices.total == 2 && cached.fromCache && cached.countedAt == first.countedAt)
            clock.advance(by: .seconds(DeviceFigures.idleAfter))
            let recounted = try await slow.snapshot()
            #expect(recounted.devices.total == 3 && !recounted.fromCache, "figures older than the idle limit are recounted")
        }
    }

    @Test("an ended send's outcome groups are counted once; a running send's on every view")
    func endedSendGroups() async throws {
        try await TestDatabase.withMigratedStore(.sqlite) { store in
            let cache = EndedSendGroups()
            let send = try await store.createSend(NewSend(target: "t", summary: "s", status: .running))
            func record(_ n: Int) async throws {
                _ = try await store.recordOutcomes(
                    [
                        DeliveryOutcome(
                            token: StoreConformance.token(n), environment: .production,
                            result: .accepted(apnsID: APNSID()), at: Date())
                    ], for: send.id, checkpoint: nil)
            }
            try await record(1)
            #expect(try await cache.groups(of: send, in: store).map(\.count) == [1])
            try await record(2)
            #expect(try await cache.groups(of: send, in: store).map(\.count) == [2], "running: counted again")
            let ended = try await store.updateSend(send.id, SendUpdate(status: .completed))
            #expect(try await cache.groups(of: ended, in: store).map(\.count) == [2])
            // Nothing records into an ended send; were it to, the page would keep what it counted.
            try await record(3)
            #expect(try await cache.groups(of: ended, in: store).map(\.count) == [2], "ended: counted once")
        }
    }
}
