package import Foundation
package import HeraldCore
package import HeraldStore

/// A send, validated: which devices, and the notification each one gets.
///
/// Made by the server from the body of `POST /api/send` (which checks it against the configuration of the moment:
/// every notification variant, one per language the send carries plus the default, is validated and encoded there,
/// so a send that would be rejected for its content fails before anything is sent), or by a worker from the stored
/// ``SendJob`` of a queued send (``init(job:sendID:at:)``), which it sends exactly as accepted, whatever the
/// configuration says by then.
///
/// Alert and background notifications carry the send's id in a `herald` key beside `aps`
/// (`"herald": {"send": "<id>"}`, ``receiptKey``) unless the app turned receipts off: the device's SDK names the send
/// when it reports the notification received or opened (`POST /api/events`). The key is part of every variant before
/// validation, so it counts against APNs's payload limit.
package struct SendPlan: Sendable {
    /// The send's id: what the `herald` key carries, and what each device's `apns-id` is derived from.
    package let sendID: SendID
    /// What a queued send stores, and a worker runs: the devices, the schedule and every prepared notification.
    package let job: SendJob
    /// The devices: the target, narrowed to the app, the environment asked for and the token kinds that take the
    /// push type; and for a wave of a `localTime` send, to its time zones.
    package private(set) var query: DeviceQuery
    /// The single token of a `{"token": …}` target, which must be registered; `nil` for a plan made from a job.
    package let singleToken: DeviceToken?
    /// For a priority-10 Live Activity update: each variant at priority 5, which a device whose person turned
    /// frequent updates off gets (ActivityKit's budget is smaller there); `nil` for any other send.
    private let infrequentVariants: [String: PreparedNotification]?

    /// The app the send is for.
    package var bundleID: String { job.bundleID }
    /// When the send starts; `nil`: now.
    package var schedule: SendSchedule? { job.schedule }
    /// The most notifications per second the whole send may start; `nil`: as fast as APNs takes them.
    package var rate: Int? { job.rate }
    /// Whether the target is every device of the app (`{"topic": …}`).
    package var targetsEveryDevice: Bool { job.targetsEveryDevice }
    /// The push type every targeted device gets.
    package var pushType: APNSPushType { job.pushType }
    /// The target in words, safe to show.
    package var targetDescription: String { job.targetDescription }
    /// The notification in words, safe to show: no alert text.
    package var summary: String { job.summary }

    /// The custom key beside `aps` that carries the send id, for delivery receipts.
    package static let receiptKey = "herald"
    /// The push types whose payload the app's code sees (a service extension, the app delegate): only they carry
    /// the `herald` key.
    package static let receiptPushTypes: Set<APNSPushType> = [.alert, .background]

    /// A stored send, as a worker runs it: nothing is checked or looked up again.
    /// - Parameters:
    ///   - now: The time of sending: a Live Activity payload that had no `aps.timestamp` gets it.
    package init(job: SendJob, sendID: SendID, at now: Date) {
        self.init(validated: job.stamped(at: now), sendID: sendID, singleToken: nil)
    }

    /// A send the caller validated: `job` holds what was checked, and a `{"token": …}` target names its token.
    package init(validated job: SendJob, sendID: SendID, singleToken: DeviceToken?) {
        self.sendID = sendID
        self.job = job
        // With a quiet-hours rule, people's own windows split the target's time zones into (zone, window) groups.
        query = job.quietHours == nil ? job.query : job.query.groupingByOwnQuietHours()
        self.singleToken = singleToken
        infrequentVariants = Self.infrequentVariants(of: job)
    }

    /// A Live Activity update at priority 10 (or APNs's default, 10) as priority-5 variants.
    private static func infrequentVariants(of job: SendJob) -> [String: PreparedNotification]? {
        guard job.pushType == .liveactivity, let first = job.notifications[""],
            first.priority == nil || first.priority == .immediate,
            (try? JSONValue(parsing: first.body))?["aps"]?["event"]?.stringValue == "update"
        else { return nil }
        return job.notifications.mapValues { $0.with(priority: .considerPower) }
    }

    /// The same send for the devices registered by `date` only: a background send accepted then keeps to the devices it
    /// counted, however long it runs (its job stores the bound).
    package func registered(through date: Date) -> SendPlan {
        SendPlan(validated: job.with(query: job.query.registered(through: date)), sendID: sendID, singleToken: singleToken)
    }

    /// The same send, narrowed to the devices of some time zones (a wave of a `localTime` send).
    package func narrowed(to timeZones: DeviceQuery.TimeZoneFilter) -> SendPlan {
        var copy = self
        copy.query = query.timeZones(timeZones)
        return copy
    }

    /// The same send, narrowed to the devices up to a position of its target's order: one shard's run.
    package func bounded(through bound: DeviceCursor?) -> SendPlan {
        var copy = self
        copy.query = query.through(bound)
        return copy
    }

    /// When each time zone's devices are due: the schedule, and the quiet-hours rule.
    package var timetable: SendTimetable { SendTimetable(schedule: job.schedule, quietHours: job.quietHours) }

    /// Whether the send waits in the queue for a worker whatever its size: scheduled or paced sends.
    package var mustRunInBackground: Bool { schedule != nil || rate != nil }

    /// The scheduler lane of the send once queued: paced sends and sends to more than `campaignThreshold` devices are
    /// campaigns; other Live Activity pushes have their own lane; sends to every device of the app are campaigns too,
    /// and the rest are background sends.
    package func lane(targetCount: Int, campaignThreshold: Int) -> SendLane {
        if rate != nil || targetCount > campaignThreshold { return .campaign }
        if pushType == .liveactivity { return .activity }
        return targetsEveryDevice ? .campaign : .background
    }

    /// The notification a device gets: the variant of its first preferred language that the send carries
    /// (`fr-CA` takes `fr-ca`, then `fr`), else the default.
    package func notification(for device: DeviceRegistration) -> PreparedNotification {
        variant(for: device).notification
    }

    /// The variant a device gets (``notification(for:)``) and the language of its text: the variant's key (`fr`,
    /// `fr-ca`), `nil` for the default, whose language the send does not say. A web notification carries it as `lang`.
    package func variant(for device: DeviceRegistration) -> (language: String?, notification: PreparedNotification) {
        let variants = device.frequentPushesEnabled == false ? infrequentVariants ?? job.notifications : job.notifications
        if variants.count > 1 {
            for language in device.preferredLanguages {
                let tag = language.lowercased()
                if let exact = variants[tag] { return (tag, exact) }
                if let dash = tag.firstIndex(of: "-") {
                    let primary = String(tag[..<dash])
                    if let variant = variants[primary] { return (primary, variant) }
                }
            }
        }
        return (nil, variants[""]!)
    }

    /// Every prepared notification by language key (`""` is the default): what a dry run shows.
    package var preparedVariants: [String: PreparedNotification] { job.notifications }

    /// The language keys the send carries, for tests and summaries.
    package var languages: [String] { job.notifications.keys.filter { !$0.isEmpty }.sorted() }
}
