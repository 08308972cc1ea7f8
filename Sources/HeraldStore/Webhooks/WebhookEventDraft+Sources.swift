package import Foundation
import HeraldCore

extension WebhookEventDraft {
    /// The events an outcome reports: `notification.accepted` or `notification.rejected`, and `token.removed` or
    /// `token.corrected` when Herald changed the registry because of it.
    package static func events(of outcome: DeliveryOutcome, in send: SendID) -> [WebhookEventDraft] {
        var data: [String: JSONValue] = [
            "sendId": .string(send.description), "token": .string(outcome.token.hex),
            "environment": .string(outcome.environment.name), "at": .string(RFC3339.string(outcome.at)),
        ]
        let type: WebhookEventType
        switch outcome.result {
        case .accepted(let apnsID):
            type = .notificationAccepted
            data["apnsId"] = .string(apnsID.headerValue)
        case .rejected(let status, let reason, let timestamp):
            type = .notificationRejected
            data["status"] = .integer(status)
            data["reason"] = .string(reason.rawValue)
            if let timestamp { data["apnsTimestamp"] = .string(RFC3339.string(timestamp)) }
        case .failed(let message):
            type = .notificationRejected
            data["reason"] = .string("NotDelivered")
            data["message"] = .string(message)
        }
        var drafts = [WebhookEventDraft(type: type, token: outcome.token, sendID: send, data: .object(data), at: outcome.at)]
        let registry: WebhookEventType? =
            switch outcome.action {
            case .removed: .tokenRemoved
            case .environmentCorrected: .tokenCorrected
            case .kept, nil: nil
            }
        if let registry {
            var about = data
            for key in ["apnsId", "status", "message", "apnsTimestamp"] { about.removeValue(forKey: key) }
            if registry == .tokenCorrected { about["reason"] = .string("BadDeviceToken") }
            drafts.append(
                WebhookEventDraft(type: registry, token: outcome.token, sendID: send, data: .object(about), at: outcome.at))
        }
        return drafts
    }

    /// The `receipt.*` event of a recorded receipt.
    package static func event(of receipt: ReceiptEvent, in send: SendID) -> WebhookEventDraft {
        let type: WebhookEventType =
            switch receipt.kind {
            case .received: .receiptReceived
            case .opened: .receiptOpened
            case .action: .receiptAction
            case .dismissed: .receiptDismissed
            }
        var data: [String: JSONValue] = [
            "sendId": .string(send.description), "token": .string(receipt.token.hex),
            "at": .string(RFC3339.string(receipt.at)),
        ]
        if receipt.kind == .action { data["action"] = .string(receipt.action ?? "") }
        return WebhookEventDraft(type: type, token: receipt.token, sendID: send, data: .object(data), at: receipt.at)
    }

    /// `send.completed` or `send.failed` for a send that just ended that way; `nil` for another status. Its app is
    /// resolved by ``WebhookOutbox`` from the send's devices.
    package static func event(ofEnded send: SendRecord, at now: Date) -> WebhookEventDraft? {
        let type: WebhookEventType
        switch send.status {
        case .completed: type = .sendCompleted
        case .failed: type = .sendFailed
        default: return nil
        }
        var data: [String: JSONValue] = [
            "sendId": .string(send.id.description), "status": .string(send.status.rawValue),
            "target": .string(send.target), "summary": .string(send.summary),
            "accepted": .integer(send.counts.accepted), "rejected": .integer(send.counts.rejected),
            "failed": .integer(send.counts.failed), "at": .string(RFC3339.string(now)),
        ]
        if let message = send.message { data["message"] = .string(message) }
        return WebhookEventDraft(type: type, sendID: send.id, data: .object(data), at: now)
    }

    /// `activity.ended` for an activity ended through the API.
    package static func event(ofEndedActivity id: String, app: String, at now: Date) -> WebhookEventDraft {
        WebhookEventDraft(
            type: .activityEnded, app: app,
            data: .object(["activityId": .string(id), "at": .string(RFC3339.string(now))]), at: now)
    }
}
