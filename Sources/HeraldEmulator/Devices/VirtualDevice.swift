public import Foundation
public import HeraldCore

/// A device as the emulator sees it: a token in one environment for one topic, with what it received.
public struct VirtualDevice: Sendable, Hashable {
    public let token: DeviceToken
    public let environment: APNSEnvironment
    /// The full topic the token belongs to (bundle id plus push-type suffix).
    public let topic: String
    public var state: State
    /// An offline device keeps at most one pending notification (the newest), as APNs stores one per app.
    public var isOnline: Bool
    /// Whether a push-to-start it receives starts the Live Activity (``StartedActivity``). `false` plays a device whose
    /// push-to-start token went stale: APNs accepts the push, and nothing starts.
    public var startsActivities = true

    public enum State: Sendable, Hashable {
        case active
        /// APNs answers 410 `Unregistered` with this time (milliseconds in the response).
        case unregistered(since: Date)
        /// APNs answers 410 `ExpiredToken`.
        case expired
    }
}

/// One notification a device received.
public struct InboxEntry: Sendable, Hashable {
    public let apnsID: String
    public let pushType: String?
    public let topic: String
    public let priority: Int?
    public let expiration: Int?
    public let collapseID: String?
    public let receivedAt: Date
    /// The body exactly as sent.
    public let payload: [UInt8]
    /// The channel a broadcast came through; `nil` for a push to the device's token.
    public var channelID: String? = nil
    /// Whether it is a push-to-start (`liveactivity` with `"event": "start"`): a device that starts activities starts
    /// one when it arrives.
    public var startsActivity = false

    /// The body as text.
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }
}

/// A Live Activity a push-to-start started on a device: what the app then sees, and registers the update token of.
public struct StartedActivity: Sendable, Hashable {
    /// The push-to-start token the push went to.
    public let token: DeviceToken
    public let environment: APNSEnvironment
    /// The push's `apns-id`.
    public let apnsID: String
    /// The push's `attributes-type`.
    public let attributesType: String?
    public let startedAt: Date
}

/// How one Live Activity on one device used its budget of priority-10 updates in the last hour.
public struct LiveActivityBudgetUse: Sendable, Hashable {
    public let token: DeviceToken
    /// `device` for updates pushed to the device's token; `channel:<id>` for broadcasts through a channel.
    public let activity: String
    /// Priority-10 updates delivered in the hour before now.
    public let usedThisHour: Int
    /// Updates dropped for being over the budget since start (or the last counter reset).
    public let dropped: Int
}

/// Totals since start (or the last reset).
public struct EmulatorCounters: Sendable, Hashable {
    /// Requests answered 200.
    public var accepted: Int = 0
    /// Rejections per reason.
    public var rejected: [String: Int] = [:]
    /// Accepted requests whose apns-id had been accepted before: resends that reached the device twice.
    public var duplicateAPNSIDs: Int = 0
    /// Notifications dropped from full inboxes.
    public var droppedFromInbox: Int = 0
    /// Connections accepted, and GOAWAY frames sent.
    public var connections: Int = 0
    public var goAways: Int = 0
    /// Faults injected, by kind.
    public var faults: [String: Int] = [:]
    /// Broadcasts accepted, and the inbox entries they made (one per online subscriber, and per stored message that
    /// reached a device coming online).
    public var broadcasts: Int = 0
    public var broadcastDeliveries: Int = 0
    /// Channel-management requests answered with success (created, read, deleted, listed).
    public var channelRequests: Int = 0
    /// Priority-10 Live Activity updates accepted by APNs but over a device's hourly budget for the activity: the
    /// device would drop them, so they are not in its inbox.
    public var liveActivityBudgetDropped: Int = 0
    /// Streams the client reset (RST_STREAM) before their answer: requests it cancelled or stopped waiting for.
    public var clientResets: Int = 0
    /// Push-to-starts that started a Live Activity, and those a device ignored (``VirtualDevice/startsActivities``).
    public var activitiesStarted: Int = 0
    public var pushToStartsIgnored: Int = 0

    public var totalRejected: Int { rejected.values.reduce(0, +) }
}
