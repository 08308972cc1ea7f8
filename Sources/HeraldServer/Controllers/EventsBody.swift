import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore

/// The body of `POST /api/events`: a batch of delivery receipts, parsed and checked whole before anything is stored.
///
/// `{"events": [{"type": "received", "token": "<hex>", "sendId": "<uuid>", "apnsId": "<uuid>", "at": "<RFC 3339>"},
/// …]}`; `type` is `received`, `opened`, `action` (with `"action": "<identifier>"`) or `dismissed`; at least one of
/// `sendId` and `apnsId`. Unknown fields are ignored, so an older server accepts a newer SDK.
struct EventsBody {
    /// The largest body: room for the most events with long tokens.
    static let maximumBytes = 64 * 1024
    /// The most events one request may carry.
    static let maximumEvents = 100

    var events: [ReceiptEvent]

    /// Parses a request body.
    /// - Throws: ``APIError`` `400` with `invalidJSON`, `invalidField` or `badDeviceToken`; the message names the field
    ///   (`events[2].at`). Nothing is stored for a body that fails here.
    init(json bytes: some Collection<UInt8>) throws(APIError) {
        let fields = try JSONFields(body: bytes)
        try TextRules.checkNoNUL(in: .object(fields.members))
        guard let list = fields["events"] else {
            throw APIError.invalidField(
                "events", "send the reports as {\"events\": [{\"type\": \"received\", \"token\": …, \"sendId\": …, \"at\": …}]}")
        }
        guard case .array(let elements) = list else {
            throw APIError.invalidField("events", "it must be an array of events, not \(list.typeName)")
        }
        guard (1...Self.maximumEvents).contains(elements.count) else {
            throw APIError.invalidField("events", "send 1 to \(Self.maximumEvents) events per request")
        }
        events = []
        events.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            events.append(try Self.event(element, field: "events[\(index)]"))
        }
    }

    private static func event(_ value: JSONValue, field: String) throws(APIError) -> ReceiptEvent {
        guard case .object(let members) = value else {
            throw APIError.invalidField(field, "each event must be an object, not \(value.typeName)")
        }
        let fields = JSONFields(members)
        func name(_ member: String) -> String { "\(field).\(member)" }
        func string(_ member: String, bytes: ClosedRange<Int>) throws(APIError) -> String? {
            guard let value = fields[member] else { return nil }
            guard case .string(let text) = value else {
                throw APIError.invalidField(name(member), "it must be a string, not \(value.typeName)")
            }
            guard bytes.contains(text.utf8.count) else {
                throw APIError.invalidField(name(member), "it must have \(bytes.lowerBound) to \(bytes.upperBound) bytes")
            }
            return text
        }

        let kinds = ReceiptEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        guard let typeName = try string("type", bytes: 1...16) else {
            throw APIError.invalidField(name("type"), "say what happened: one of \(kinds)")
        }
        guard let kind = ReceiptEvent.Kind(rawValue: typeName) else {
            throw APIError.invalidField(name("type"), "use one of \(kinds)")
        }
        guard let hex = try string("token", bytes: 1...1024) else {
            throw APIError.invalidField(name("token"), "give the device's token as hex")
        }
        let token: DeviceToken
        do {
            token = try DeviceToken(hex: hex)
        } catch {
            throw APIError(.badRequest, reason: "badDeviceToken", "\(name("token")): \(error.description)")
        }
        let sendID = try string("sendId", bytes: 36...36).map { text throws(APIError) in
            guard let id = SendID(text) else {
                throw APIError.invalidField(name("sendId"), "it must be the UUID of the notification's herald.send key")
            }
            return id
        }
        let apnsID = try string("apnsId", bytes: 36...36).map { text throws(APIError) in
            guard let id = APNSID(headerValue: text) else {
                throw APIError.invalidField(name("apnsId"), "it must be the notification's apns-id, a UUID")
            }
            return id
        }
        guard sendID != nil || apnsID != nil else {
            throw APIError.invalidField(
                name("sendId"), "give the send id (the notification's herald.send key), the apns-id, or both")
        }
        let action = try string("action", bytes: 1...ReceiptEvent.maximumActionBytes)
        try TextRules.checkIdentifier(action, field: name("action"))
        if kind == .action, action == nil {
            throw APIError.invalidField(name("action"), "an action event names the action's identifier")
        }
        if kind != .action, action != nil {
            throw APIError.invalidField(name("action"), "only an event of type action names an action")
        }
        guard let time = try string("at", bytes: 1...40) else {
            throw APIError.invalidField(name("at"), "give the time it happened, such as 2026-01-02T08:00:00Z")
        }
        guard let at = RFC3339.date(time) else {
            throw APIError.invalidField(name("at"), "it must be an RFC 3339 time such as 2026-01-02T08:00:00Z")
        }
        return ReceiptEvent(kind: kind, token: token, sendID: sendID, apnsID: apnsID, action: action, at: at)
    }
}
