import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle
import Synchronization

/// `herald doctor`'s checks in `herald serve`: run once the store is migrated, beside the server rather than before
/// it, so they never delay or stop the start. What is not ok is logged as a warning, certificates' expiry becomes the
/// metric `herald_apns_certificate_expiry_timestamp_seconds`, and the console's overview shows the report.
final class DeploymentCheckService: Service, Sendable {
    private let doctor: Doctor
    private let store: any Store
    private let storeReady: Gate
    private let metrics: ServerMetrics
    private let logger: Logger
    private let latest = Mutex<DeploymentReport?>(nil)

    init(doctor: Doctor, store: any Store, storeReady: Gate, metrics: ServerMetrics, logger: Logger) {
        self.doctor = doctor
        self.store = store
        self.storeReady = storeReady
        self.metrics = metrics
        self.logger = logger
    }

    /// The checks' outcome; `nil` until they have run.
    var report: DeploymentReport? { latest.withLock { $0 } }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.storeReady.wait()
            guard !Task.isCancelled else { return }
            let report = await self.doctor.run(using: self.store)
            for certificate in report.certificates { self.metrics.certificateExpiry(certificate) }
            self.latest.withLock { $0 = report }
            for check in report.checks where check.status == .warning || check.status == .failure {
                self.logger.warning(
                    "Deployment check \(check.name) (\(check.status.rawValue)): \(check.message)")
            }
            self.logger.info("Deployment checks, as herald doctor runs them: \(report.summary)")
        }
        try? await gracefulShutdown()
    }
}
