public import Foundation
public import HeraldCore

/// Whether push-to-start notifications that APNs accepted started their activity (docs/live-activities.md,
/// "Push-to-start tokens that start nothing"). APNs answers `200` to a push-to-start sent to a token the device no
/// longer honours; only the app's answer tells: an activity it started hands it an update token, which the SDK
/// registers with the activity's id and the installation's id. Once an activity's start send has ended and the
/// devices have had their time, the check compares the installations APNs accepted the start for with those that
/// registered an update token, counts both on the activity, and marks a push-to-start token stale after several misses
/// in a row. Methods throw ``StoreError`` (or `CancellationError`).
public protocol PushToStartCheckStore: Sendable {
    /// Records that an installation's app registered an update token of an activity, while the activity's start is
    /// still to be checked (afterwards, or for an activity Herald did not start, nothing is written).
    func recordActivityStart(topic: String, activityID: String, installationID: UUID) async throws

    /// Activities whose start send ended at or before `endedBy` and whose start is not checked yet, oldest first.
    func activityStartsDue(endedBy: Date, limit: Int) async throws -> [DueStartCheck]

    /// The installations whose app registered an update token of the activity since it started.
    func startedInstallations(topic: String, activityID: String) async throws -> Set<UUID>

    /// Records a check in one transaction: the activity's counts, each token's misses in a row (reset by a start),
    /// the misses for the trace, the tokens that became stale and their `token.stale` events.
    /// - Returns: `nil` when the activity was checked already (by another instance): nothing is written.
    func recordStartCheck(_ check: StartCheck) async throws -> RecordedStartCheck?
}

/// An activity whose start is due to be checked.
public struct DueStartCheck: Sendable, Hashable {
    public var topic: String
    public var activityID: String
    public var sendID: SendID

    public init(topic: String, activityID: String, sendID: SendID) {
        self.topic = topic
        self.activityID = activityID
        self.sendID = sendID
    }
}

/// What a check found, for ``PushToStartCheckStore/recordStartCheck(_:)``.
public struct StartCheck: Sendable, Hashable {
    public var due: DueStartCheck
    /// Push-to-start tokens APNs accepted the start for whose app registered an update token of the activity.
    public var started: [DeviceToken]
    /// Those whose app registered nothing for it.
    public var notStarted: [DeviceToken]
    /// Accepted for tokens the check could not judge (no installation id, or no longer registered): counted nowhere.
    public var unknown: Int
    /// Misses in a row that make a token stale; 0: never.
    public var staleAfter: Int

    public init(due: DueStartCheck, started: [DeviceToken], notStarted: [DeviceToken], unknown: Int, staleAfter: Int) {
        self.due = due
        self.started = started
        self.notStarted = notStarted
        self.unknown = unknown
        self.staleAfter = staleAfter
    }
}

/// A recorded check.
public struct RecordedStartCheck: Sendable, Hashable {
    /// The activity with its counts.
    public var activity: ActivityRecord
    /// The tokens this check made stale.
    public var newlyStale: [DeviceToken]

    public init(activity: ActivityRecord, newlyStale: [DeviceToken]) {
        self.activity = activity
        self.newlyStale = newlyStale
    }
}
