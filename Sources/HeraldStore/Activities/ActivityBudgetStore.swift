public import Foundation

/// Live Activity update budgets (docs/live-activities.md, "Update budget"): priority-10 updates counted per activity
/// and hour, by every instance on one database.
public protocol ActivityBudgetStore: Sendable {
    /// Counts one priority-10 update of an activity in the hour of `now`, if it fits the budget or is forced; else
    /// counts it as downgraded (to priority 5). Atomic across instances: of concurrent updates, exactly `budget` fit.
    ///
    /// Rows of the activity's earlier hours are deleted on the way, so an activity keeps one row.
    /// - Parameters:
    ///   - budget: Priority-10 updates an activity may have per hour.
    ///   - force: The caller insists on priority 10: counted as spent even beyond the budget.
    func spendActivityBudget(topic: String, activityID: String, budget: Int, force: Bool, at now: Date) async throws
        -> ActivityBudgetUse

    /// An activity's use of its budget in the hour of `now`: zeros when it has none.
    func activityBudgetUse(topic: String, activityID: String, at now: Date) async throws -> ActivityBudgetUse

    /// Takes up to `wanted` push-to-start notifications from an app's pace for the second of `now`
    /// (`HERALD_PUSH_TO_START_RATE`, docs/live-activities.md, "Push-to-start pace"): as many as the second has left.
    /// Atomic across sends and instances: of concurrent takes in one second, exactly `perSecond` are granted in all.
    ///
    /// Rows of the app's earlier seconds are deleted on the way, so an app keeps one row.
    func takePushToStartPace(topic: String, wanted: Int, perSecond: Int, at now: Date) async throws
        -> PushToStartPace
}

/// What an app's push-to-start pace granted in one second.
public struct PushToStartPace: Sendable, Hashable {
    /// The start of the second counted (UTC).
    public var second: Date
    /// Push-to-start notifications this take may send now: 0 when the second's pace is spent.
    public var granted: Int
    /// Granted in the second so far, by every send and instance, this take included.
    public var sentThisSecond: Int
    /// Asked for in the second beyond the pace: those wait for a later second.
    public var heldBackThisSecond: Int

    public init(second: Date, granted: Int, sentThisSecond: Int, heldBackThisSecond: Int) {
        self.second = second
        self.granted = granted
        self.sentThisSecond = sentThisSecond
        self.heldBackThisSecond = heldBackThisSecond
    }

    /// The start of the second `date` is in.
    public static func second(of date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }

    /// The `activity_id` of an app's push-to-start row in `activity_budgets`: no activity has an empty id.
    package static let rowActivityID = ""

    /// The oldest second whose row a take in `second` keeps: the one before it. A take whose clock was read just
    /// before a second ended can reach the store after another take of the next second; were that earlier second's
    /// row gone, the late take would find it fresh and be granted again beyond the pace.
    package static func oldestKept(by second: Date) -> Date {
        second.addingTimeInterval(-1)
    }
}

/// An activity's priority-10 updates in one hour.
public struct ActivityBudgetUse: Sendable, Hashable {
    /// The start of the hour counted (UTC, on the hour).
    public var hour: Date
    /// Priority-10 updates sent in the hour, forced ones included.
    public var spent: Int
    /// Updates sent at priority 5 instead because the budget was spent.
    public var downgraded: Int
    /// Whether the hour's last update went at priority 10 (it fitted, or was forced): for
    /// ``ActivityBudgetStore/spendActivityBudget(topic:activityID:budget:force:at:)``, the update it counted.
    public var fitted: Bool

    public init(hour: Date, spent: Int = 0, downgraded: Int = 0, fitted: Bool = true) {
        self.hour = hour
        self.spent = spent
        self.downgraded = downgraded
        self.fitted = fitted
    }

    /// The start of the hour `date` is in.
    public static func hour(of date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 3600).rounded(.down) * 3600)
    }
}
