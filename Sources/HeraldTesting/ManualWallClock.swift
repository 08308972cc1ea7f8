public import Foundation
public import HeraldCore
import Synchronization

/// A wall clock that only moves when a test moves it, so JWT ages and 410 timestamps are exact and tests never sleep.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    /// Starts at a fixed, recent moment by default: 2026-01-01T00:00:00Z.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or backward, for a negative duration).
    public func advance(by duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock.
    public func set(to date: Date) { current.withLock { $0 = date } }
}
