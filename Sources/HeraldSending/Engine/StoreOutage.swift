import Foundation
import HeraldStore
package import Logging

/// Waits out the database's transient faults for the engine (``HeraldStore/StoreError/isTransient``): a restart, a
/// failover, a lost connection, a statement that timed out. The operation is tried again, backing off from 50 ms to
/// ``maximumBackoff``, until it succeeds, fails for good, or the caller gives up; a send is never failed for a
/// database that is only away (docs/reliability.md, "When the database is away").
///
/// Only idempotent operations go through it: recording a batch again keeps one outcome per device, a page read or a
/// claim of caps changes nothing twice.
package struct StoreOutage: Sendable {
    /// What the backoff waits on.
    let clock: any Clock<Duration>
    let logger: Logger
    let metrics: (any SendingMetrics)?
    /// The longest wait between two tries: how late after the database's return the work goes on, at most.
    package var maximumBackoff: Duration = .seconds(1)

    package init(clock: any Clock<Duration>, logger: Logger, metrics: (any SendingMetrics)?) {
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    /// Runs `operation`, trying it again while it fails with a transient store error.
    /// - Parameters:
    ///   - action: What the operation does, for the log ("record delivery outcomes").
    ///   - givenUp: Checked before each new try: once `true`, the last transient error is thrown (a shutdown past its
    ///     grace, a cancelled send).
    /// - Throws: A permanent error at once; the last transient error once `givenUp`; `CancellationError`.
    package func retrying<T: Sendable>(
        _ action: String, givenUp: @Sendable () -> Bool = { false },
        _ operation: @Sendable () async throws -> T
    ) async throws -> T {
        var backoff = Duration.milliseconds(50)
        var awaySince: ContinuousClock.Instant?
        while true {
            do {
                let value = try await operation()
                if let awaySince {
                    metrics?.storeOutage(ended: true)
                    logger.notice(
                        "The database is back: going on",
                        metadata: [
                            LogKey.action: "\(action)",
                            LogKey.seconds: "\(Self.seconds(ContinuousClock.now - awaySince))",
                        ])
                }
                return value
            } catch let error as StoreError where error.isTransient {
                if awaySince == nil {
                    awaySince = .now
                    metrics?.storeOutage(ended: false)
                    logger.warning(
                        "The database is away: waiting for it, nothing is lost or sent twice meanwhile",
                        metadata: [LogKey.action: "\(action)", LogKey.error: "\(error)"])
                }
                if givenUp() {
                    metrics?.storeOutage(ended: true)
                    throw error
                }
                try await clock.sleep(for: backoff)
                backoff = min(backoff * 2, maximumBackoff)
            }
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.2f", Double(seconds) + Double(attoseconds) / 1e18)
    }
}
