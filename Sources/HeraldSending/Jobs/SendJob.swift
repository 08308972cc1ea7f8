package import Foundation
package import HeraldCore
package import HeraldStore

/// An accepted send as the store keeps it: everything a worker needs to perform it exactly as it was accepted.
///
/// The job holds the outcome of validation, not the request: the devices to reach (``query``), the schedule and rate,
/// and every notification the send carries, prepared (encoded, checked against APNs's rules, encrypted with the
/// content key of that moment, with the receipt key if the app had receipts on). A worker that resumes or starts a
/// queued send runs it from here and looks nothing up in the configuration, so a send queued before the configuration
/// changed (an app renamed or removed, receipts turned off, a content key rotated, limits changed) still goes out as
/// accepted.
///
/// Stored as JSON (``jsonText``), format version 2 (``StoredJob/currentVersion``); ``StoredJob`` reads it back.
package struct SendJob: Sendable, Hashable {
    /// The app's bundle id.
    package let bundleID: String
    /// The devices. A `localTime` send's wave narrows it to some time zones when it runs; that filter is not stored.
    package let query: DeviceQuery
    /// The push type every notification of the send has.
    package let pushType: APNSPushType
    /// When the send starts; `nil`: as soon as a worker takes it.
    package let schedule: SendSchedule?
    /// The most notifications per second the whole send may start; `nil`: as fast as APNs takes them.
    package let rate: Int?
    /// The target in words, safe to show.
    package let targetDescription: String
    /// The notification in words, safe to show: no alert text.
    package let summary: String
    /// The prepared notification per language key (lowercase BCP 47 tag); `""` is the default, always there.
    package let notifications: [String: PreparedNotification]
    /// Whether ``stamped(at:)`` sets `aps.timestamp` to the time of sending: a Live Activity payload that had none.
    ///
    /// A device shows the Live Activity update with the latest timestamp and drops older ones, so a scheduled update
    /// stamped when it was asked for could lose to one sent meanwhile.
    package let stampsTimestamp: Bool
    /// The frequency caps the send counts against, as accepted (none for a mandatory category, a push other than an
    /// alert, or a send that opted out): each device's person must have room in all of them.
    package var frequencyCaps: [FrequencyCap] = []
    /// What happens to the devices in their quiet hours when the send reaches them; `nil`: quiet hours do not apply
    /// (the send ignores them, is exempt, or the app has no window).
    package let quietHours: QuietHoursRule?

    /// A job.
    /// - Precondition: `notifications` has the default, `""`.
    package init(
        bundleID: String, query: DeviceQuery, pushType: APNSPushType, schedule: SendSchedule?, rate: Int?,
        targetDescription: String, summary: String, notifications: [String: PreparedNotification],
        stampsTimestamp: Bool, quietHours: QuietHoursRule? = nil
    ) {
        precondition(notifications[""] != nil, "a send has a default notification")
        self.bundleID = bundleID
        self.query = query
        self.pushType = pushType
        self.schedule = schedule
        self.rate = rate
        self.targetDescription = targetDescription
        self.summary = summary
        self.notifications = notifications
        self.stampsTimestamp = stampsTimestamp
        self.quietHours = quietHours
    }

    /// The job as a worker sends it at `date`: when ``stampsTimestamp``, every notification's `aps.timestamp` is
    /// `date`; otherwise the job unchanged.
    package func stamped(at date: Date) -> SendJob {
        guard stampsTimestamp else { return self }
        var stamped = SendJob(
            bundleID: bundleID, query: query, pushType: pushType, schedule: schedule, rate: rate,
            targetDescription: targetDescription, summary: summary,
            notifications: notifications.mapValues { notification in
                PreparedNotification(
                    body: JSONValue.stamping(notification.body, at: date), pushType: notification.pushType,
                    topic: notification.topic, priority: notification.priority, expiration: notification.expiration,
                    collapseID: notification.collapseID, apnsID: notification.apnsID)
            },
            stampsTimestamp: true, quietHours: quietHours)
        stamped.frequencyCaps = frequencyCaps
        return stamped
    }

    /// The same job for the devices of `query`.
    func with(query: DeviceQuery) -> SendJob {
        var job = SendJob(
            bundleID: bundleID, query: query, pushType: pushType, schedule: schedule, rate: rate,
            targetDescription: targetDescription, summary: summary, notifications: notifications,
            stampsTimestamp: stampsTimestamp, quietHours: quietHours)
        job.frequencyCaps = frequencyCaps
        return job
    }

    /// Whether the send is for every device of its app (a `{"topic": …}` target).
    package var targetsEveryDevice: Bool {
        if case .topic = query.selector { return true }
        return false
    }

    /// The stored form: a JSON object with its members in name order, version 2.
    package var jsonText: String { json.storedText }
}
