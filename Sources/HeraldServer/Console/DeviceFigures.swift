import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Logging
import ServiceLifecycle
import Synchronization

/// The overview's device figures (devices by app, environment, kind and platform; new devices per day), kept fresh in
/// the background while the console is in use, so the overview answers in milliseconds with millions of devices.
///
/// Counting a million registrations takes a scan of the registry, seconds on a loaded machine: too long for a page,
/// and too much to repeat on every view. While a count is quick (under `quickCount`: a small registry) every view
/// counts afresh. Once it is not, the overview shows the latest figures and their age; they are recounted every
/// ``refreshInterval`` while someone viewed the overview in the last ``idleAfter``, and not at all otherwise. The first
/// view after a start, or after the console sat unused, waits for one count.
final class DeviceFigures: Service, Sendable {
    /// What the overview shows.
    struct Snapshot: Sendable {
        var devices: DeviceStatistics
        var newDevices: [DayCount]
        /// When they were counted.
        var countedAt: Date
        /// Whether they come from an earlier count (the registry is too large to count on every view).
        var fromCache = false
    }

    static let refreshInterval: Duration = .seconds(60)
    /// A count quicker than this is repeated on every view.
    let quickCount: Duration
    static let idleAfter: TimeInterval = 600

    private let store: any Store
    private let clock: any WallClock
    /// What the recount waits on between counts (the server's sleep clock, so tests can drive it).
    private let sleepClock: any Clock<Duration>
    private let logger: Logger
    private let state = Mutex<(snapshot: Snapshot?, lastViewed: Date?, slow: Bool)>((nil, nil, false))
    private let wanted = WakeSignal()
    private let counted = WakeSignal()

    init(
        store: any Store, clock: any WallClock, sleepClock: any Clock<Duration> = ContinuousClock(), logger: Logger,
        quickCount: Duration = .milliseconds(50)
    ) {
        self.quickCount = quickCount
        self.store = store
        self.clock = clock
        self.sleepClock = sleepClock
        self.logger = logger
    }

    /// The latest figures, counting them first when there are none (or they are older than the idle limit).
    func snapshot() async throws -> Snapshot {
        let now = clock.now()
        let current = state.withLock { state -> Snapshot? in
            state.lastViewed = now
            guard state.slow, var snapshot = state.snapshot, now.timeIntervalSince(snapshot.countedAt) < Self.idleAfter
            else { return nil }
            snapshot.fromCache = true
            return snapshot
        }
        wanted.signal()
        if let current { return current }
        return try await count()
    }

    /// Recounts while the overview is viewed; sleeps otherwise.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.wanted.wait()
                let viewed = self.state.withLock { $0.lastViewed }
                guard let viewed, self.clock.now().timeIntervalSince(viewed) < Self.idleAfter else { continue }
                do {
                    _ = try await self.count()
                } catch {
                    self.logger.warning(
                        "Cannot count the console's device figures", metadata: [LogKey.error: "\(error)"])
                }
                try? await self.sleepClock.sleep(for: Self.refreshInterval)
                // Keep counting while the overview is open in some browser.
                self.wanted.signal()
            }
        }
    }

    private func count() async throws -> Snapshot {
        let now = clock.now()
        let started = ContinuousClock.now
        let day: TimeInterval = 86_400
        let today = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / day).rounded(.down) * day)
        async let devices = store.deviceStatistics()
        async let newDevices = store.newDevicesPerDay(since: today.addingTimeInterval(-13 * day))
        let snapshot = Snapshot(devices: try await devices, newDevices: try await newDevices, countedAt: now)
        let elapsed = started.duration(to: .now)
        let slow = elapsed >= quickCount
        state.withLock { state in
            state.snapshot = snapshot
            state.slow = slow
        }
        return snapshot
    }
}
