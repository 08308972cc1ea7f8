public import Foundation
import GRDB
public import HeraldStore

extension SQLiteStore {
    public func spendActivityBudget(topic: String, activityID: String, budget: Int, force: Bool, at now: Date)
        async throws -> ActivityBudgetUse
    {
        let hour = ActivityBudgetUse.hour(of: now)
        return try await write("count a Live Activity update") { db in
            try db.execute(StoreSQL.deleteActivityBudgets(topic: topic, activityID: activityID, before: hour, .sqlite))
            let statement = StoreSQL.spendActivityBudget(
                topic: topic, activityID: activityID, hour: hour, budget: budget, force: force, .sqlite)
            guard let row = try db.rows(statement).first else {
                throw StoreError(.corruptRecord, "Counting a Live Activity update returned no row.")
            }
            return try row.activityBudgetUse(hour: hour)
        }
    }

    public func activityBudgetUse(topic: String, activityID: String, at now: Date) async throws -> ActivityBudgetUse {
        let hour = ActivityBudgetUse.hour(of: now)
        return try await read("read a Live Activity's budget") { db in
            try db.rows(StoreSQL.activityBudgetUse(topic: topic, activityID: activityID, hour: hour, .sqlite)).first?
                .activityBudgetUse(hour: hour) ?? ActivityBudgetUse(hour: hour)
        }
    }

    public func takePushToStartPace(topic: String, wanted: Int, perSecond: Int, at now: Date) async throws
        -> PushToStartPace
    {
        let second = PushToStartPace.second(of: now)
        return try await write("pace push-to-start notifications") { db in
            try db.execute(
                StoreSQL.deleteActivityBudgets(
                    topic: topic, activityID: PushToStartPace.rowActivityID,
                    before: PushToStartPace.oldestKept(by: second), .sqlite))
            let statement = StoreSQL.takePushToStartPace(
                topic: topic, second: second, wanted: wanted, perSecond: perSecond, .sqlite)
            guard let row = try db.rows(statement).first else {
                throw StoreError(.corruptRecord, "Pacing push-to-start notifications returned no row.")
            }
            return try row.pushToStartPace(second: second)
        }
    }
}
