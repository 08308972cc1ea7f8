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

    /// The body as text.
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }
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

    public var totalRejected: Int { rejected.values.reduce(0, +) }
}
