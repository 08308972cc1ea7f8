public import Foundation
public import HeraldCore

/// What the app reports about one notification it got from Herald: it arrived, the user opened it, chose one of its
/// actions, or dismissed it (docs/receiving-pushes.md, "Delivery receipts").
///
/// A receipt names the notification by the send id of its `herald` key (``HeraldCore/Payload/heraldSendID``) and the
/// device by its token, so the server counts it for that send; the same receipt twice counts once.
public struct DeliveryReceipt: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The notification reached the device: the service extension ran, or the app saw it.
        case received
        /// The user tapped it.
        case opened
        /// The user chose an action button, by its identifier (1 to 100 bytes, no control characters).
        case action(String)
        /// The user dismissed it (categories with ``NotificationCategory/Options/customDismissAction``).
        case dismissed

        /// The `type` the server reads.
        var type: String {
            switch self {
            case .received: "received"
            case .opened: "opened"
            case .action: "action"
            case .dismissed: "dismissed"
            }
        }
    }

    /// What happened.
    public var kind: Kind
    /// The device's token.
    public var token: DeviceToken
    /// The send the notification belongs to.
    public var sendID: UUID
    /// When it happened.
    public var at: Date

    /// - Parameters: see the properties.
    public init(kind: Kind, token: DeviceToken, sendID: UUID, at: Date) {
        self.kind = kind
        self.token = token
        self.sendID = sendID
        self.at = at
    }

    /// The receipt for a notification, or `nil` when its payload has no `herald` key (the app turned receipts off,
    /// or the notification did not come from Herald).
    public init?(_ kind: Kind, for payload: Payload, token: DeviceToken, at: Date) {
        guard let sendID = payload.heraldSendID else { return nil }
        self.init(kind: kind, token: token, sendID: sendID, at: at)
    }

    /// One event of `POST /api/events`.
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "type": .string(kind.type), "token": .string(token.hex),
            "sendId": .string(sendID.uuidString.lowercased()), "at": .string(RFC3339.string(at)),
        ]
        if case .action(let identifier) = kind { members["action"] = .string(identifier) }
        return .object(members)
    }

    /// Checks what the server would refuse, so a queued receipt never makes a batch fail.
    /// - Throws: ``RegistrationError`` `invalidRegistration` naming `action`.
    func validate() throws(RegistrationError) {
        guard case .action(let identifier) = kind else { return }
        guard (1...100).contains(identifier.utf8.count),
            !identifier.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw RegistrationError.invalidRegistration(
                field: "action", "an action identifier has 1 to 100 bytes and no control characters")
        }
    }
}

extension Payload {
    /// The send id of the payload's `herald` key (`"herald": {"send": "<uuid>"}`), which Herald adds to alert and
    /// background notifications for delivery receipts; `nil` when there is none.
    public var heraldSendID: UUID? {
        guard case .object(let members)? = custom["herald"], let text = members["send"]?.stringValue else {
            return nil
        }
        return UUID(uuidString: text)
    }
}
