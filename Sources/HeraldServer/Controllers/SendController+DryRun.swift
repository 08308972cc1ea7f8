import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird

/// `POST /api/send?dryRun=true`: the send's validation, target count, payloads and headers, without sending.
///
/// The body goes through the same parser and checks as a real send (``SendPlan``, the registered-token check, the
/// target count), so a dry run answers exactly the error a send would; nothing is recorded and nothing is sent. The
/// console's compose page validates and previews through it as you type.
extension SendController {
    /// Whether the request asks for a dry run: `?dryRun=true` (`false`, or no parameter, sends).
    /// - Throws: ``APIError`` `400 invalidField` for another value.
    static func isDryRun(_ request: Request) throws(APIError) -> Bool {
        switch try request.queryParameter("dryRun") {
        case nil, "false": return false
        case "true": return true
        default: throw APIError.invalidField("dryRun", "use true to validate without sending, or leave it out")
        }
    }

    /// The dry run's answer: what would be sent, to how many devices (and how many of them are Web Push
    /// subscriptions), and how.
    func dryRunAnswer(_ plan: SendPlan, count: Int, webSubscriptions: Int, suppressed: SuppressedCounts) -> Response {
        let notifications = plan.preparedVariants.sorted { $0.key < $1.key }.map { language, notification in
            var headers: [String: JSONValue] = [
                "apns-push-type": .string(notification.pushType.rawValue), "apns-topic": .string(notification.topic),
            ]
            if let priority = notification.priority { headers["apns-priority"] = .string(priority.description) }
            if let expiration = notification.expiration { headers["apns-expiration"] = .string(expiration.description) }
            if let collapseID = notification.collapseID { headers["apns-collapse-id"] = .string(collapseID) }
            var members: [String: JSONValue] = [
                "headers": .object(headers),
                "payload": (try? JSONValue(parsing: notification.body)) ?? .null,
                "payloadBytes": .integer(notification.body.count),
                "payloadLimit": .integer(notification.pushType.maximumPayloadSize),
            ]
            if !language.isEmpty { members["language"] = .string(language) }
            return JSONValue.object(members)
        }
        return .json(
            .object([
                "dryRun": true,
                "target": .string(plan.targetDescription),
                "summary": .string(plan.summary),
                "targetCount": .integer(count),
                "webSubscriptionCount": .integer(webSubscriptions),
                "suppressed": Self.suppressedJSON(suppressed),
                "background": .bool(count > engine.inlineLimit),
                "notifications": .array(notifications),
            ]))
    }
}
