import HeraldCore
import HeraldSending
import Logging
import ServiceLifecycle

/// A pass of background work the server runs once the store is ready and then at an interval, until it stops: the
/// push-to-start check and the channel tidy. A pass that fails logs a warning and is tried at the next interval; a
/// disabled one waits for the shutdown (a service that returns would end the server's service group).
struct PeriodicPass: Service {
    /// What the warning calls the work ("check Live Activity starts").
    let work: String
    let isEnabled: Bool
    let interval: Duration
    let sleepClock: any Clock<Duration>
    let storeReady: Gate
    let logger: Logger
    let pass: @Sendable () async throws -> Void

    func run() async throws {
        guard isEnabled else {
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            await storeReady.wait()
            while !Task.isCancelled {
                do {
                    try await pass()
                } catch {
                    if Task.isCancelled { return }
                    logger.warning(
                        "Could not \(work); tried again in \(interval)", metadata: [LogKey.error: "\(error)"])
                }
                try await sleepClock.sleep(for: interval)
            }
        }
    }
}
