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
        /// Seconds a device has, after an activity's start send ended, to start the activity (its app registers an
        /// update token of it) before its push-to-start counts as `notStarted` (docs/live-activities.md,
        /// "Push-to-start tokens that start nothing"). An hour leaves time to a device that was offline, for which
        /// APNs keeps the push. 0 checks nothing.
        public var startCheckAfter: Int
        /// Push-to-starts in a row that started nothing before a token counts as stale and is left out of sends until
        /// the app registers a new one. 0: never stale (the misses are still counted).
        public var staleAfter: Int
        /// Whether the server deletes broadcast channels no running activity follows: those whose activities have all
        /// ended, and those unused for ``channelUnusedAfter`` (docs/live-activities.md, "Channels kept tidy"). Off by
        /// default: a channel the app's own code subscribes activities to looks unused to the server.
        public var channelTidy: Bool
        /// Seconds without a broadcast (since its creation, or its last broadcast) after which the tidy deletes a
        /// channel no running activity follows.
        public var channelUnusedAfter: Int

        public init(
            updateBudget: Int = 12, pushToStartRate: Int = 0, startCheckAfter: Int = 3600, staleAfter: Int = 3,
            channelTidy: Bool = false, channelUnusedAfter: Int = 604_800
        ) {
            self.updateBudget = updateBudget
            self.pushToStartRate = pushToStartRate
            self.startCheckAfter = startCheckAfter
            self.staleAfter = staleAfter
            self.channelTidy = channelTidy
            self.channelUnusedAfter = channelUnusedAfter
        }
    }
}
