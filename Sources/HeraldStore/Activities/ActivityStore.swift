public import Foundation
import HeraldCore

/// Live Activities the server started, by the app's own activity id: whether each is still running, so an update to
/// an ended one is refused. The devices' tokens of an activity are registrations (``TokenRegistration/activityID``).
/// Methods throw ``StoreError`` (or `CancellationError`).
public protocol ActivityStore: Sendable {
    /// Records a started activity.
    /// - Returns: `nil` when the app has an activity with that id already (running or ended): nothing is written.
    func createActivity(_ activity: NewActivity) async throws -> ActivityRecord?

    /// An activity, or `nil` when unknown.
    func activity(topic: String, id: String) async throws -> ActivityRecord?

    /// Counts an update of a running activity, or ends it, in one statement: two requests racing to end an activity
    /// cannot both go through.
    func recordActivityPush(topic: String, id: String, ending: Bool) async throws -> ActivityPush

    /// A page of an app's activities, newest first (by start time, then id), after the cursor.
    /// - Parameters:
    ///   - active: Only running activities (`true`), only ended ones (`false`), or both (`nil`).
    ///   - after: Where the previous page ended (its ``ActivityPage/next``), or `nil` for the first page.
    ///   - limit: At most this many activities.
    func activities(topic: String, active: Bool?, after: ActivityCursor?, limit: Int) async throws -> ActivityPage
}

/// What became of an update or end of an activity (``ActivityStore/recordActivityPush(topic:id:ending:)``).
public enum ActivityPush: Sendable, Hashable {
    /// Counted, or ended: the activity as stored now.
    case recorded(ActivityRecord)
    /// Refused: the activity had ended already (as stored, unchanged).
    case ended(ActivityRecord)
    /// There is no such activity.
    case unknown
}

/// What ``ActivityStore/createActivity(_:)`` records.
public struct NewActivity: Sendable, Hashable {
    /// The app (bundle id).
    public var topic: String
    /// The app's own id of the activity.
    public var id: String
    /// Its `ActivityAttributes` type.
    public var activityType: String
    /// The send of its push-to-start notifications: the devices APNs accepted it for are checked for a start once the
    /// send has ended (``PushToStartCheckStore``). `nil`: not checked.
    public var startSendID: SendID?
    /// The broadcast channel it follows (`inputPushChannel`): a channel none of whose activities runs any more may be
    /// deleted (``ChannelStore/idleChannels(unusedBefore:limit:)``).
    public var channelID: String?

    public init(topic: String, id: String, activityType: String, startSendID: SendID? = nil, channelID: String? = nil) {
        self.topic = topic
        self.id = id
        self.activityType = activityType
        self.startSendID = startSendID
        self.channelID = channelID
    }
}

/// A Live Activity as stored.
public struct ActivityRecord: Sendable, Hashable {
    public var topic: String
    public var id: String
    public var activityType: String
    /// Whether it runs: `false` once ended through the API.
    public var isActive: Bool
    /// How many updates were sent (an end is not one).
    public var updates: Int
    public var createdAt: Date
    public var updatedAt: Date
    /// When it was ended, once it was.
    public var endedAt: Date?
    /// What became of its push-to-start notifications, once they were checked.
    public var startCheck: ActivityStartCheck?
}

/// How many devices an activity's push-to-start notifications started, as checked once its start send had ended and
/// the devices had had their time (docs/live-activities.md, "Push-to-start tokens that start nothing").
public struct ActivityStartCheck: Sendable, Hashable {
    /// Devices whose app registered an update token of the activity.
    public var started: Int
    /// Devices APNs accepted the push-to-start for, whose app registered nothing for the activity.
    public var notStarted: Int
    public var checkedAt: Date

    public init(started: Int, notStarted: Int, checkedAt: Date) {
        self.started = started
        self.notStarted = notStarted
        self.checkedAt = checkedAt
    }
}

/// Where a page of ``ActivityStore/activities(topic:active:after:limit:)`` ended: its last activity's start time and
/// id. Its `description` is an opaque string an HTTP API hands out and parses back with ``init(_:)``.
public struct ActivityCursor: Sendable, Hashable, LosslessStringConvertible {
    package let createdAt: Int64
    package let id: String

    package init(createdAt: Int64, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    /// Parses `<microseconds>_<activity id>` (the id may itself hold `_`); `nil` for anything else.
    public init?(_ description: String) {
        let parts = description.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]), parts[1].utf8.count <= RegistrationRules.maximumActivityIDBytes
        else { return nil }
        createdAt = time
        id = String(parts[1])
    }

    public var description: String { "\(createdAt)_\(id)" }
}

/// One page of activities, newest first.
public struct ActivityPage: Sendable, Hashable {
    public var activities: [ActivityRecord]
    /// Where the next page starts, or `nil` on the last page.
    public var next: ActivityCursor?
}
