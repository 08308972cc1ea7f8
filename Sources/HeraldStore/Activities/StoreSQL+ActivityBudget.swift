package import Foundation

/// The statements of Live Activity update budgets, for both backends.
extension StoreSQL {
    /// Counts one priority-10 update in an hour: spent when it fits (or is forced), else downgraded; returns
    /// `spent, downgraded, last_fit`. One statement, so concurrent updates on any instance count one by one (the row's
    /// lock on PostgreSQL, the single writer on SQLite).
    package static func spendActivityBudget(
        topic: String, activityID: String, hour: Date, budget: Int, force: Bool, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        // The SET expressions read the row as it was before this update.
        let fitsNew = "($4 > 0 OR $5 = 1)"
        let fitsOld = "(activity_budgets.spent < $4 OR $5 = 1)"
        return SQLStatement(
            dialect,
            """
            INSERT INTO activity_budgets (topic, activity_id, hour, spent, downgraded, last_fit) \
            VALUES ($1, $2, $3, CASE WHEN \(fitsNew) THEN 1 ELSE 0 END, CASE WHEN \(fitsNew) THEN 0 ELSE 1 END, \
            CASE WHEN \(fitsNew) THEN 1 ELSE 0 END) \
            ON CONFLICT (topic, activity_id, hour) DO UPDATE SET \
            spent = activity_budgets.spent + CASE WHEN \(fitsOld) THEN 1 ELSE 0 END, \
            downgraded = activity_budgets.downgraded + CASE WHEN \(fitsOld) THEN 0 ELSE 1 END, \
            last_fit = CASE WHEN \(fitsOld) THEN 1 ELSE 0 END \
            RETURNING spent, downgraded, last_fit
            """,
            [
                .text(topic), .text(activityID), .integer(StoreTime.microseconds(hour)), .integer(Int64(budget)),
                .integer(force ? 1 : 0),
            ])
    }

    /// Takes up to `wanted` push-to-start notifications from an app's row of one second (``PushToStartPace``):
    /// `spent` counts what was granted, `downgraded` what had to wait, `last_fit` this take's grant; returns
    /// `spent, downgraded, last_fit`. One statement, counted one by one as ``spendActivityBudget(topic:activityID:hour:budget:force:_:)``.
    package static func takePushToStartPace(
        topic: String, second: Date, wanted: Int, perSecond: Int, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        // $3 wanted, $4 per second. The SET expressions read the row as it was before this take.
        let takeNew = "CASE WHEN $3 <= $4 THEN $3 ELSE $4 END"
        let takeOld =
            "CASE WHEN activity_budgets.spent + $3 <= $4 THEN $3 "
            + "WHEN activity_budgets.spent < $4 THEN $4 - activity_budgets.spent ELSE 0 END"
        // An app's row has the empty activity id (PushToStartPace.rowActivityID): no activity has it.
        return SQLStatement(
            dialect,
            """
            INSERT INTO activity_budgets (topic, activity_id, hour, spent, downgraded, last_fit) \
            VALUES ($1, '', $2, \(takeNew), $3 - \(takeNew), \(takeNew)) \
            ON CONFLICT (topic, activity_id, hour) DO UPDATE SET \
            spent = activity_budgets.spent + \(takeOld), \
            downgraded = activity_budgets.downgraded + $3 - \(takeOld), \
            last_fit = \(takeOld) \
            RETURNING spent, downgraded, last_fit
            """,
            [.text(topic), .integer(StoreTime.microseconds(second)), .integer(Int64(wanted)), .integer(Int64(perSecond))])
    }

    /// Deletes an activity's rows of the hours before one.
    package static func deleteActivityBudgets(
        topic: String, activityID: String, before hour: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "DELETE FROM activity_budgets WHERE topic = $1 AND activity_id = $2 AND hour < $3",
            [.text(topic), .text(activityID), .integer(StoreTime.microseconds(hour))])
    }

    /// An activity's use in an hour: `spent, downgraded, last_fit`, or no row.
    package static func activityBudgetUse(
        topic: String, activityID: String, hour: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            "SELECT spent, downgraded, last_fit FROM activity_budgets WHERE topic = $1 AND activity_id = $2 AND hour = $3",
            [.text(topic), .text(activityID), .integer(StoreTime.microseconds(hour))])
    }
}

extension StoredRow {
    /// A take from `spent, downgraded, last_fit`.
    package func pushToStartPace(second: Date) throws -> PushToStartPace {
        PushToStartPace(
            second: second, granted: Int(try integer(2)), sentThisSecond: Int(try integer(0)),
            heldBackThisSecond: Int(try integer(1)))
    }

    /// A use from `spent, downgraded, last_fit`.
    package func activityBudgetUse(hour: Date) throws -> ActivityBudgetUse {
        ActivityBudgetUse(
            hour: hour, spent: Int(try integer(0)), downgraded: Int(try integer(1)), fitted: try integer(2) == 1)
    }
}
