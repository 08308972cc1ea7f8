extension ServerConfiguration {
    /// Live Activity settings (docs/live-activities.md, "Update budget").
    public struct LiveActivities: Sendable, Hashable {
        /// Priority-10 updates an activity may have per hour, counted by every instance through the database; later
        /// ones go at priority 5 unless a request insists (`"priority": 10, "force": true`). Apple budgets
        /// priority-10 updates without saying how many: 12 an hour leaves room for an update every five minutes.
        /// 0 turns the budget off.
        public var updateBudget: Int

        public init(updateBudget: Int = 12) {
            self.updateBudget = updateBudget
        }
    }
}
