public import Foundation
public import HeraldStore

extension PostgresStore {
    public func spendActivityBudget(topic: String, activityID: String, budget: Int, force: Bool, at now: Date)
        async throws -> ActivityBudgetUse
    {
        let hour = ActivityBudgetUse.hour(of: now)
        return try await transaction("count a Live Activity update") { session in
            try await session.execute(
                StoreSQL.deleteActivityBudgets(topic: topic, activityID: activityID, before: hour, .postgres))
            let statement = StoreSQL.spendActivityBudget(
                topic: topic, activityID: activityID, hour: hour, budget: budget, force: force, .postgres)
            guard let row = try await session.rows(statement).first else {
                throw StoreError(.corruptRecord, "Counting a Live Activity update returned no row.")
            }
            return try row.activityBudgetUse(hour: hour)
        }
    }

    public func activityBudgetUse(topic: String, activityID: String, at now: Date) async throws -> ActivityBudgetUse {
        let hour = ActivityBudgetUse.hour(of: now)
        return try await session("read a Live Activity's budget") { session in
            try await session.rows(StoreSQL.activityBudgetUse(topic: topic, activityID: activityID, hour: hour, .postgres))
                .first?.activityBudgetUse(hour: hour) ?? ActivityBudgetUse(hour: hour)
        }
    }

    public func takePushToStartPace(topic: String, wanted: Int, perSecond: Int, at now: Date) async throws
        -> PushToStartPace
    {
        let second = PushToStartPace.second(of: now)
        return try await transaction("pace push-to-start notifications") { session in
            try await session.execute(
                StoreSQL.deleteActivityBudgets(
                    topic: topic, activityID: PushToStartPace.rowActivityID,
                    before: PushToStartPace.oldestKept(by: second), .postgres))
            let statement = StoreSQL.takePushToStartPace(
                topic: topic, second: second, wanted: wanted, perSecond: perSecond, .postgres)
            guard let row = try await session.rows(statement).first else {
                throw StoreError(.corruptRecord, "Pacing push-to-start notifications returned no row.")
            }
            return try row.pushToStartPace(second: second)
        }
    }
}
