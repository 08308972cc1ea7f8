import Foundation
public import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// Whether the push-to-start notifications APNs accepted started their Live Activity (docs/live-activities.md,
/// "Push-to-start tokens that start nothing").
///
/// APNs answers `200` to a push-to-start sent to a token the device no longer honours, and the device starts nothing.
/// An activity that does start hands its app an update token, which the SDK registers with the activity's id and the
/// installation's id: ``noteRegistration(_:in:)`` records that start. Once an activity's start send has ended and
/// ``ServerConfiguration/LiveActivities/startCheckAfter`` has passed, ``checkDue()`` compares the installations APNs
/// accepted the push-to-start for with those that registered an update token of the activity, counts `started` and
/// `notStarted` on the activity and in each device's trace, and marks a token stale after
/// ``ServerConfiguration/LiveActivities/staleAfter`` misses in a row (left out of sends; a `token.stale` event). Several
/// instances may check at once: an activity's check is recorded once (``PushToStartCheckStore``).
public struct PushToStartChecks: Sendable {
    /// What one pass found.
    public struct Report: Sendable, Hashable {
        /// Activities checked.
        public var activities = 0
        public var started = 0
        public var notStarted = 0
        /// Accepted for tokens the check could not judge: registered without an installation id, or removed since.
        public var unjudged = 0
        /// Tokens this pass made stale.
        public var newlyStale: [DeviceToken] = []
    }

    let store: any Store
    let settings: ServerConfiguration.LiveActivities
    let clock: any WallClock
    let metrics: ServerMetrics
    let logger: Logger

    var isEnabled: Bool { settings.startCheckAfter > 0 }

    /// How often the server runs ``checkDue()``: every minute, or a quarter of the check's delay when shorter.
    var interval: Duration { .seconds(max(1, min(60, settings.startCheckAfter / 4))) }

    /// Records the start an update token's registration reports (whichever door it came through), for an activity
    /// whose start is still to check: the store writes nothing for another activity, so this needs no setting.
    static func noteRegistration(_ registration: TokenRegistration, in store: any Store) async throws {
        guard registration.tokenKind == .liveActivity, let activity = registration.activityID,
            let installation = registration.installationID
        else { return }
        try await store.recordActivityStart(topic: registration.topic, activityID: activity, installationID: installation)
    }

    /// Checks every activity whose start send ended at least ``ServerConfiguration/LiveActivities/startCheckAfter``
    /// seconds ago and is not checked yet.
    public func checkDue() async throws -> Report {
        var report = Report()
        guard isEnabled else { return report }
        let cutoff = clock.now().addingTimeInterval(-Double(settings.startCheckAfter))
        while true {
            let due = try await store.activityStartsDue(endedBy: cutoff, limit: Self.activitiesPerRead)
            for activity in due {
                try Task.checkCancellation()
                try await check(activity, into: &report)
            }
            if due.count < Self.activitiesPerRead { return report }
        }
    }

    static let activitiesPerRead = 20

    private func check(_ due: DueStartCheck, into report: inout Report) async throws {
        var accepted: [DeviceToken] = []
        var cursor: OutcomeCursor?
        repeat {
            let page = try await store.outcomes(of: due.sendID, after: cursor, limit: 1_000)
            for outcome in page.outcomes {
                if case .accepted = outcome.result { accepted.append(outcome.token) }
            }
            cursor = page.next
        } while cursor != nil
        let startedInstallations = try await store.startedInstallations(topic: due.topic, activityID: due.activityID)
        var started: [DeviceToken] = []
        var notStarted: [DeviceToken] = []
        if !accepted.isEmpty {
            for try await device in store.allDevices(matching: DeviceQuery.tokens(accepted).includingInvalidated()) {
                guard device.topic == due.topic, device.tokenKind == .liveActivityStart,
                    let installation = device.installationID
                else { continue }
                if startedInstallations.contains(installation) {
                    started.append(device.token)
                } else {
                    notStarted.append(device.token)
                }
            }
        }
        let unjudged = accepted.count - started.count - notStarted.count
        let check = StartCheck(
            due: due, started: started, notStarted: notStarted, unknown: unjudged, staleAfter: settings.staleAfter)
        guard let recorded = try await store.recordStartCheck(check) else { return }
        report.activities += 1
        report.started += started.count
        report.notStarted += notStarted.count
        report.unjudged += unjudged
        report.newlyStale += recorded.newlyStale
        metrics.pushToStartsChecked(app: due.topic, started: started.count, notStarted: notStarted.count)
        metrics.pushToStartTokensStale(app: due.topic, count: recorded.newlyStale.count)
        logger.info(
            "Checked a Live Activity's push-to-start: \(started.count) started, \(notStarted.count) did not",
            metadata: [
                "herald.activity": "\(due.activityID)", LogKey.topic: "\(due.topic)",
                "herald.unjudged": "\(unjudged)", "herald.stale": "\(recorded.newlyStale.count)",
            ])
        for token in recorded.newlyStale {
            logger.notice(
                "Left a push-to-start token out of sends: its starts started nothing \(settings.staleAfter) times in a row",
                metadata: [LogKey.tokenSuffix: "\(token.redacted)", LogKey.topic: "\(due.topic)"])
        }
    }
}
