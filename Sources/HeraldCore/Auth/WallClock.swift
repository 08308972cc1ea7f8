public import Foundation

/// Where code that needs the calendar time (a JWT's `iat`, a 410 timestamp) reads it, so tests can set it.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}
