import Foundation
import HeraldCore
import HeraldStore

extension DeviceRegistration {
    /// The registration in the request's field names and canonical form (docs/api-registration.md): `token`
    /// lowercase, both `environment` and `debug`, `tokenKind` always, absent optional fields left out, and
    /// `createdAt`/`updatedAt` in RFC 3339 UTC. Admin lookups add `registeredAt` and the invalidation.
    func json(includingAdminFields: Bool = false, revealingToken: Bool = true) -> JSONValue {
        var members: [String: JSONValue] = [
            "token": .string(revealingToken ? registration.token.hex : registration.token.redacted),
            "environment": .string(registration.environment.name),
            "debug": .bool(registration.environment.isDevelopment),
            "topic": .string(registration.topic),
            "tokenKind": .string(registration.tokenKind.name),
            "createdAt": .string(RFC3339.string(createdAt)),
            "updatedAt": .string(RFC3339.string(updatedAt)),
        ]
        if let userID = registration.userID { members["userId"] = .string(userID) }
        if !registration.preferredLanguages.isEmpty {
            members["preferredLanguages"] = .array(registration.preferredLanguages.map { .string($0) })
        }
        if let appVersion = registration.appVersion { members["appVersion"] = .string(appVersion) }
        if let platform = registration.platform { members["platform"] = .string(platform.name) }
        if let installationID = registration.installationID {
            members["installationId"] = .string(installationID.lowercasedText)
        }
        if !registration.tags.isEmpty { members["tags"] = .array(registration.tags.map { .string($0) }) }
        if let timeZone = registration.timeZone { members["timeZone"] = .string(timeZone) }
        if let activityType = registration.activityType { members["activityType"] = .string(activityType) }
        if let activityID = registration.activityID { members["activityId"] = .string(activityID) }
        if let enabled = registration.activitiesEnabled { members["activitiesEnabled"] = .bool(enabled) }
        if let frequent = registration.frequentPushesEnabled { members["frequentPushesEnabled"] = .bool(frequent) }
        if let webPush = registration.webPush {
            // The keys stay here: only the browser and the sender need them.
            members["pushService"] = .string(webPush.audience)
            if revealingToken { members["endpoint"] = .string(webPush.endpoint.absoluteString) }
        }
        if includingAdminFields {
            members["registeredAt"] = .string(RFC3339.string(registeredAt))
            members["active"] = .bool(isActive)
            if let staleSince { members["staleSince"] = .string(RFC3339.string(staleSince)) }
            if let invalidation {
                var details: [String: JSONValue] = [
                    "reason": .string(invalidation.reason.rawValue),
                    "recordedAt": .string(RFC3339.string(invalidation.recordedAt)),
                ]
                if let timestamp = invalidation.apnsTimestamp {
                    details["apnsTimestamp"] = .string(RFC3339.string(timestamp))
                }
                members["invalidation"] = .object(details)
            }
        }
        return .object(members)
    }
}
