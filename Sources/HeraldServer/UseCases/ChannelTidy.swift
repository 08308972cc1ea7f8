import Foundation
import HeraldCore
import HeraldSending
public import HeraldStore
import Logging

/// Broadcast channels kept tidy (docs/live-activities.md, "Channels kept tidy"): APNs allows 10,000 live channels per
/// app and environment, and a channel lives on after its activities end. Each pass reports the live channels of each
/// app and environment (`herald_channels` on `/metrics`, a warning from 9,000 on), and, when
/// ``ServerConfiguration/LiveActivities/channelTidy`` is on, deletes through ``ChannelOperations`` — on APNs and here,
/// audited as `herald (channel tidy)` — every live channel no running activity follows that either had activities (all
/// ended) or was not used for ``ServerConfiguration/LiveActivities/channelUnusedAfter``.
public struct ChannelTidy: Sendable {
    /// What one pass did.
    public struct Report: Sendable, Hashable {
        /// Live channels per app and environment, before any deletion of this pass.
        public var counts: [LiveChannelCount] = []
        /// The channels this pass deleted, by id.
        public var deleted: [String] = []
        /// Channels whose deletion failed (APNs refused, or did not answer): tried again at the next pass.
        public var failed: [String] = []
    }

    /// APNs's cap of live channels per app and environment.
    static let cap = 10_000
    /// From this many on, each pass warns.
    static let warning = 9_000
    /// How often the server runs ``runOnce()``.
    static let interval = Duration.seconds(600)

    let store: any Store
    let channels: ChannelOperations
    let settings: ServerConfiguration.LiveActivities
    let clock: any WallClock
    let metrics: ServerMetrics
    let logger: Logger

    /// The caller deletions are made and audited as.
    private var caller: Caller {
        Caller(
            access: KeyAccess(key: nil), actor: AuditActor(kind: .server, keyID: nil, name: "herald (channel tidy)"),
            address: nil, logger: logger)
    }

    /// Counts the live channels and, when the tidy is on, deletes the idle ones.
    public func runOnce() async throws -> Report {
        var report = Report()
        report.counts = try await store.liveChannelCounts()
        for count in report.counts {
            metrics.liveChannels(app: count.topic, environment: count.environment, count: count.count)
            if count.count >= Self.warning {
                logger.warning(
                    "\(count.topic) has \(count.count) live broadcast channels in \(count.environment.name): APNs allows \(Self.cap). Delete the channels no activity uses, or set HERALD_CHANNEL_TIDY=true",
                    metadata: [LogKey.topic: "\(count.topic)", LogKey.environment: "\(count.environment)"])
            }
        }
        guard settings.channelTidy else { return report }
        let unusedBefore = clock.now().addingTimeInterval(-Double(settings.channelUnusedAfter))
        var skipped = Set<String>()
        while true {
            let idle = try await store.idleChannels(unusedBefore: unusedBefore, limit: 100 + skipped.count)
                .filter { !skipped.contains($0.id) }
            if idle.isEmpty { return report }
            for channel in idle {
                try Task.checkCancellation()
                do {
                    _ = try await channels.deleteChannel(channel.id, by: caller)
                    report.deleted.append(channel.id)
                } catch let error as APIError {
                    // Refused or unanswered: left for the next pass, and not asked again in this one.
                    skipped.insert(channel.id)
                    report.failed.append(channel.id)
                    logger.warning(
                        "Could not delete an idle broadcast channel; tried again at the next pass",
                        metadata: [LogKey.channelID: "\(channel.id)", LogKey.error: "\(error.message)"])
                }
            }
        }
    }
}
