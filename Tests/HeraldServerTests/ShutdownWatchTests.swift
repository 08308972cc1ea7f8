import HeraldCore
import HeraldTesting
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldServer

/// A stop that takes long names the services it waits for.
@Suite("Server: shutdown watch", .timeLimit(.minutes(1)))
struct ShutdownWatchTests {
    /// Ends at graceful shutdown.
    private struct PromptService: Service {
        let started: OneShot<Void>

        func run() async throws {
            started.fulfil(())
            try? await gracefulShutdown()
        }
    }

    /// Ignores graceful shutdown: ends only once the test opens `release` (or on cancellation).
    private struct StuckService: Service {
        let started: OneShot<Void>
        let release: Gate

        func run() async throws {
            started.fulfil(())
            await release.wait()
        }
    }

    /// The application's service group inside a service, as `HeraldApplication.run` runs it.
    private struct WatchedGroup: Service {
        let watch: ShutdownWatch
        let group: ServiceGroup

        func run() async throws {
            try await watch.reporting { try await group.run() }
        }
    }

    @Test("every interval after the shutdown began, names the services that have not ended; quiet once they have")
    func namesWhatTheStopWaitsFor() async throws {
        let capture = LogCapture()
        let clock = ManualClock()
        let watch = ShutdownWatch(interval: .seconds(10), clock: clock, logger: capture.logger())
        let promptStarted = OneShot<Void>()
        let stuckStarted = OneShot<Void>()
        let release = Gate()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        // A group stops its services last first: the stuck one is asked first and holds the prompt one's turn.
        let inner = ServiceGroup(
            services: [
                watch.observe(PromptService(started: promptStarted), as: "prompt"),
                watch.observe(StuckService(started: stuckStarted, release: release), as: "stuck"),
            ], logger: logger)
        let outer = ServiceGroup(
            configuration: .init(services: [.init(service: WatchedGroup(watch: watch, group: inner))], logger: logger))

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await outer.run() }
            try await promptStarted.wait()
            try await stuckStarted.wait()
            #expect(watch.stillRunning == ["prompt", "stuck"])
            // Nothing is reported before the shutdown, whatever the time.
            #expect(clock.sleeperCount == 0)

            await outer.triggerGracefulShutdown()
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(10))
            let first = try await capture.waitForLine { $0.contains("Still stopping") }
            #expect(first.hasPrefix("notice Still stopping 10 s after the shutdown began: waiting for prompt, stuck"))

            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(10))
            let second = try await capture.waitForLine { $0.contains("Still stopping 20 s") }
            #expect(second.contains("waiting for prompt, stuck"))

            release.open()
            try await group.next()
            #expect(watch.stillRunning.isEmpty)
            #expect(capture.all.filter { $0.contains("Still stopping") }.count == 2)
        }
    }
}
