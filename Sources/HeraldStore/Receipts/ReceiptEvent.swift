public import Foundation
public import HeraldCore

/// What a device reported about one notification of a send (`POST /api/events`): it arrived, was opened, had one of
/// its actions chosen, or was dismissed.
public struct ReceiptEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The notification reached the device (the SDK's service-extension pass, or the app saw it).
        case received
        /// The user tapped the notification.
        case opened
        /// The user chose one of the notification's action buttons (``ReceiptEvent/action``).
        case action
        /// The user dismissed the notification (categories with a custom dismiss action only).
        case dismissed
    }

    /// The most bytes an action identifier may have.
    public static let maximumActionBytes = 100

    /// What happened.
    public var kind: Kind
    /// The device that reports it.
    public var token: DeviceToken
    /// The send the notification belongs to (its `herald` key); with only an `apns-id`, the store finds the send.
    public var sendID: SendID?
    /// The notification's `apns-id`; with a send id too, it must be the one the send gave this device.
    public var apnsID: APNSID?
    /// The action's identifier, for ``Kind/action`` only.
    public var action: String?
    /// When it happened, by the device's clock.
    public var at: Date

    /// - Parameters: see the properties. At least one of `sendID` and `apnsID` must be given, and `action` exactly
    ///   for ``Kind/action`` (the server checks both before it gets here).
    public init(
        kind: Kind, token: DeviceToken, sendID: SendID?, apnsID: APNSID? = nil, action: String? = nil, at: Date
    ) {
        self.kind = kind
        self.token = token
        self.sendID = sendID
        self.apnsID = apnsID
        self.action = action
        self.at = at
    }
}

/// What ``ReceiptStore/recordReceipts(_:)`` did with one event.
public enum ReceiptResult: String, Sendable, Hashable {
    /// Stored and counted.
    case recorded
    /// The same event (send, device, kind, action) was stored before: counted once.
    case duplicate
    /// No notification of that send (or with that `apns-id`) was accepted by APNs for that device, or the send and
    /// the `apns-id` disagree: nothing stored. Reports for sends that never reached the device cannot inflate counts.
    case unknownDelivery
}

/// A send's receipts as counted: devices that reported each kind (actions: each distinct action of each device).
public struct ReceiptCounts: Sendable, Hashable, CustomStringConvertible {
    /// Devices that reported the notification arrived, or reported anything else about it (which implies it did).
    public var received: Int
    /// Devices whose user tapped the notification.
    public var opened: Int
    /// Action buttons chosen, one per device and action.
    public var actions: Int
    /// Devices whose user dismissed the notification.
    public var dismissed: Int

    public init(received: Int = 0, opened: Int = 0, actions: Int = 0, dismissed: Int = 0) {
        self.received = received
        self.opened = opened
        self.actions = actions
        self.dismissed = dismissed
    }

    public var description: String {
        "received \(received), opened \(opened), actions \(actions), dismissed \(dismissed)"
    }
}

extension ReceiptCounts {
    /// Counts from the `received, opened, actions, dismissed` columns a statement returned.
    package init(stored row: some StoredRow) throws {
        self.init(
            received: Int(try row.integer(0)), opened: Int(try row.integer(1)), actions: Int(try row.integer(2)),
            dismissed: Int(try row.integer(3)))
    }

    /// Adds one stored event of a kind.
    package mutating func add(_ kind: ReceiptEvent.Kind) {
        switch kind {
        case .received: received += 1
        case .opened: opened += 1
        case .action: actions += 1
        case .dismissed: dismissed += 1
        }
    }
}
