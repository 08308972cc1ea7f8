import HeraldCore
package import Foundation

extension StatementStore {
    public func spendActivityBudget(topic: String, activityID: String, budget: Int, force: Bool, at now: Date)
        async throws -> ActivityBudgetUse
    {
        let hour = ActivityBudgetUse.hour(of: now)
        let rows = try await writeRows(
            answeringLastOf: "count a Live Activity update",
            [
                StoreSQL.deleteActivityBudgets(topic: topic, activityID: activityID, before: hour, dialect),
                StoreSQL.spendActivityBudget(
                    topic: topic, activityID: activityID, hour: hour, budget: budget, force: force, dialect),
            ])
        guard let row = rows.first else {
            throw StoreError(.corruptRecord, "Counting a Live Activity update returned no row.")
        }
        return try row.activityBudgetUse(hour: hour)
    }

    public func activityBudgetUse(topic: String, activityID: String, at now: Date) async throws -> ActivityBudgetUse {
        let hour = ActivityBudgetUse.hour(of: now)
        let statement = StoreSQL.activityBudgetUse(topic: topic, activityID: activityID, hour: hour, dialect)
        return try await readRows("read a Live Activity's budget", statement).first?.activityBudgetUse(hour: hour)
            ?? ActivityBudgetUse(hour: hour)
    }

    public func takePushToStartPace(topic: String, wanted: Int, perSecond: Int, at now: Date) async throws
        -> PushToStartPace
    {
        let second = PushToStartPace.second(of: now)
        let rows = try await writeRows(
            answeringLastOf: "pace push-to-start notifications",
            [
                StoreSQL.deleteActivityBudgets(
                    topic: topic, activityID: PushToStartPace.rowActivityID,
                    before: PushToStartPace.oldestKept(by: second), dialect),
                StoreSQL.takePushToStartPace(
                    topic: topic, second: second, wanted: wanted, perSecond: perSecond, dialect),
            ])
        guard let row = rows.first else {
            throw StoreError(.corruptRecord, "Pacing push-to-start notifications returned no row.")
        }
        return try row.pushToStartPace(second: second)
    }
}
