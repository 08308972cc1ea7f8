extension ServerConfiguration {
    /// Live Activity settings (docs/live-activities.md, "Update budget").
    public struct LiveActivities: Sendable, Hashable {
        /// Priority-10 updates an activity may have per hour, counted by every instance through the database; later
        /// ones go at priority 5 unless a request insists (`"priority": 10, "force": true`). Apple budgets
        /// priority-10 updates without saying how many: 12 an hour leaves room for an update every five minutes.
        /// 0 turns the budget off.
        public var updateBudget: Int
        /// Push-to-start notifications (Live Activity starts) an app may send per second, counted by every send and
        /// instance through the database (docs/live-activities.md, "Push-to-start pace"); a paced start runs in the
        /// background. 0 (the default) paces nothing: Apple's push-to-start budget is per device, not per app, and
        /// APNs does not throttle a start to many devices at once, so this only smooths the wave for the app's own
        /// backend, which every started activity calls.
        public var pushToStartRate: Int

        public init(updateBudget: Int = 12, pushToStartRate: Int = 0) {
            self.updateBudget = updateBudget
            self.pushToStartRate = pushToStartRate
        }
    }
}
